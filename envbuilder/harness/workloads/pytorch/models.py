"""ResNet-18/50 for PyTorch: torchvision's when it imports, else a built-in copy of the same architecture.

The built-in one follows torchvision's ResNet v1.5 layer for layer (same parameter count: a unit
test checks 11,689,512 and 25,557,032 at 1000 classes), so throughput is comparable to the anchors.
`width` < 64 gives the narrow variant the CPU path uses.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


def memory_format(channels_last: bool) -> torch.memory_format:
    return torch.channels_last if channels_last else torch.contiguous_format


def place(model: nn.Module, device: str | torch.device, channels_last: bool = False) -> nn.Module:
    """The model on `device`, in channels_last layout when asked (the tuned runs use it)."""
    # Module.to accepts memory_format (torch docs), but its typed overloads leave it out.
    return model.to(device, memory_format=memory_format(channels_last))  # type: ignore[call-overload,no-any-return]


def _conv3(cin: int, cout: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)


def _conv1(cin: int, cout: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, 1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin: int, planes: int, stride: int = 1, down: nn.Module | None = None):
        super().__init__()
        self.conv1 = _conv3(cin, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = _conv3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = down

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        idt = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        y: torch.Tensor = self.relu(out + idt)
        return y


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin: int, planes: int, stride: int = 1, down: nn.Module | None = None):
        super().__init__()
        self.conv1 = _conv1(cin, planes)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = _conv3(planes, planes, stride)  # v1.5: stride on the 3x3
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = _conv1(planes, planes * 4)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = down

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        idt = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        y: torch.Tensor = self.relu(out + idt)
        return y


class ResNet(nn.Module):
    def __init__(
        self,
        block: type[BasicBlock] | type[Bottleneck],
        layers: tuple[int, int, int, int],
        num_classes: int,
        width: int = 64,
    ):
        super().__init__()
        self.inplanes = width
        self.conv1 = nn.Conv2d(3, width, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        self.layer1 = self._layer(block, width, layers[0])
        self.layer2 = self._layer(block, width * 2, layers[1], 2)
        self.layer3 = self._layer(block, width * 4, layers[2], 2)
        self.layer4 = self._layer(block, width * 8, layers[3], 2)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(width * 8 * block.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
        # Each residual branch starts as zero (torchvision's zero_init_residual=True): training
        # from scratch is stable from the first step, which short certification runs need.
        for m in self.modules():
            if isinstance(m, Bottleneck):
                nn.init.zeros_(m.bn3.weight)
            elif isinstance(m, BasicBlock):
                nn.init.zeros_(m.bn2.weight)

    def _layer(
        self, block: type[BasicBlock] | type[Bottleneck], planes: int, n: int, stride: int = 1
    ) -> nn.Sequential:
        down = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            down = nn.Sequential(
                _conv1(self.inplanes, planes * block.expansion, stride),
                nn.BatchNorm2d(planes * block.expansion),
            )
        layers: list[nn.Module] = [block(self.inplanes, planes, stride, down)]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes) for _ in range(1, n)]
        return nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        logits: torch.Tensor = self.fc(torch.flatten(self.avgpool(x), 1))
        return logits


_ARCHS: dict[str, tuple[type[BasicBlock] | type[Bottleneck], tuple[int, int, int, int]]] = {
    "resnet18": (BasicBlock, (2, 2, 2, 2)),
    "resnet50": (Bottleneck, (3, 4, 6, 3)),
}


def builtin_resnet(arch: str, num_classes: int, width: int = 64) -> ResNet:
    block, layers = _ARCHS[arch]
    return ResNet(block, layers, num_classes, width)


def torchvision_status() -> tuple[bool, str]:
    """Whether torchvision's models import here (it can be present but broken for this torch)."""
    try:
        import torchvision.models  # noqa: F401
    except Exception as e:
        return False, f"{type(e).__name__}: {e}"[:300]
    return True, ""


def build_model(
    arch: str, num_classes: int, *, width: int = 64, prefer_torchvision: bool = True
) -> tuple[nn.Module, dict[str, Any]]:
    """The model and a description (source, parameter count). Full width uses torchvision's
    implementation when it imports; the narrow CPU variant is always built in."""
    info: dict[str, Any] = {"arch": arch, "width": width, "num_classes": num_classes}
    model: nn.Module | None = None
    if prefer_torchvision and width == 64:
        ok, why = torchvision_status()
        if ok:
            import torchvision.models as tvm

            model = getattr(tvm, arch)(weights=None, num_classes=num_classes, zero_init_residual=True)
            info["source"] = "torchvision"
        else:
            info["torchvision_unavailable"] = why
    if model is None:
        model = builtin_resnet(arch, num_classes, width)
        info["source"] = "built-in"
    info["parameters"] = sum(p.numel() for p in model.parameters())
    return model, info


def load_weights(model: nn.Module, path: str) -> dict[str, Any]:
    """Load a state dict (a plain one, or under 'state_dict'/'model'); a classifier head whose
    shape does not match is dropped (fine-tuning to our classes). Returns what was loaded."""
    obj = torch.load(path, map_location="cpu", weights_only=True)
    if isinstance(obj, dict) and not any(torch.is_tensor(v) for v in obj.values()):
        for key in ("state_dict", "model"):
            if isinstance(obj.get(key), dict):
                obj = obj[key]
                break
    if not isinstance(obj, dict):
        raise ValueError(f"{path}: not a state dict")
    state = {_unwrapped(str(k)): v for k, v in obj.items()}
    own = model.state_dict()
    dropped = [k for k, v in state.items() if k in own and own[k].shape != v.shape]
    for k in dropped:
        del state[k]
    res = model.load_state_dict(state, strict=False)
    loaded = len(state) - len(res.unexpected_keys)
    if loaded == 0:
        raise ValueError(f"{path}: no tensor matched the model's parameter names")
    return {
        "file": path,
        "loaded_tensors": loaded,
        "missing": list(res.missing_keys)[:20],
        "unexpected": list(res.unexpected_keys)[:20],
        "dropped_shape_mismatch": dropped,
    }


def _unwrapped(key: str) -> str:
    """A state-dict key without DataParallel's `module.` and torch.compile's `_orig_mod.` prefixes
    (str.removeprefix is 3.9+: the harness also runs on 3.8)."""
    for prefix in ("module.", "_orig_mod."):
        if key.startswith(prefix):
            key = key[len(prefix) :]
    return key
