"""Issue 24 item 3: a stack is a candidate only if its whole install set (the framework with its
extras and companions) resolves to wheels for its Python and platform. uv answers from the index
metadata (here: a real uv, offline, from a find-links folder made by wheel_factory); the answers are
remembered (generated/installable.yaml, the user's cache) and the resolver only looks them up."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner
from wheel_factory import make_wheel

from envbuilder.cli import cli
from envbuilder.errors import MatrixError
from envbuilder.host.model import Host
from envbuilder.image import installable as live
from envbuilder.image.packages import LockSettings
from envbuilder.image.python_pick import WheelCheck
from envbuilder.matrix import installable as known
from envbuilder.matrix import load_matrix
from envbuilder.matrix.model import InstallAnswer, Matrix
from envbuilder.matrix.reader import Ctx
from envbuilder.resolve.gpus import gpu_from_match, lookup_gpu
from envbuilder.resolve.model import Request
from envbuilder.resolve.resolver import install_key, installability, resolve

TF_214 = "tensorflow[and-cuda]==2.14.0"


@pytest.fixture(scope="module")
def matrix() -> Matrix:
    return load_matrix()


def h100(matrix: Matrix) -> Host:
    return Host(
        driver="550.54.15", gpus=(gpu_from_match(matrix, lookup_gpu(matrix, "H100")),), source="given"
    )


def answer(reqs: tuple[str, ...], python: str, ok: bool, why: str = "") -> InstallAnswer:
    return InstallAnswer(
        requirements=reqs,
        index_url=None,
        python=python,
        platform="linux/amd64",
        ok=ok,
        why=why,
        source="test",
    )


# --------------------------------------------------------------------------- the committed answers


def test_tensorflow_2_14_and_cuda_on_python_3_11_is_rejected_as_not_installable(matrix: Matrix) -> None:
    """The committed answer (uv on PyPI's metadata): 2.14's and-cuda pins tensorrt==8.5.3.1, which
    has wheels for cp36-cp310 only. Before: the stack was offered and its build failed."""
    req = Request(framework="tensorflow", specifier="==2.14.*", python="3.11", strategy="bundled")
    res = resolve(matrix, req, h100(matrix))
    assert res.stack is None
    [why] = [r for r in res.rejected if r.component == "installable"]
    assert why.candidate == "tensorflow 2.14.0+cuda11 / py3.11 / bundled"
    assert why.reason.startswith("tensorrt==8.5.3.1 has no wheel for cp311 manylinux x86_64 (uv ")


def test_without_a_python_the_newest_installable_one_is_chosen(matrix: Matrix) -> None:
    req = Request(framework="tensorflow", specifier="==2.14.*", strategy="bundled")
    res = resolve(matrix, req, h100(matrix))
    assert res.stack is not None and res.stack.python == "3.10"
    assert installability(matrix, res.stack).startswith("resolves (uv ")  # 3.10 was answered: ok


def test_the_hint_names_the_python_that_installs(matrix: Matrix) -> None:
    from envbuilder.resolve.hint import no_stack_hint

    req = Request(framework="tensorflow", specifier="==2.14.*", python="3.11", strategy="bundled")
    hint = no_stack_hint(matrix, resolve(matrix, req, h100(matrix)))
    assert "on Python 3.11: Python 3.10 installs tensorflow2.14.0-cuda11-py3.10-bundled" in hint
    assert hint.endswith("(--python 3.10)")


# --------------------------------------------------------------------------- the resolver's lookup


def test_a_set_nobody_checked_is_kept_and_said_not_checked(matrix: Matrix) -> None:
    bare = replace(matrix, installable=())
    req = Request(framework="tensorflow", specifier="==2.14.*", python="3.11", strategy="bundled")
    res = resolve(bare, req, h100(matrix))
    assert res.stack is not None and res.stack.python == "3.11"  # never a guess either way
    assert installability(bare, res.stack) == (
        f"not checked: no known answer for {TF_214} on Python 3.11 linux/amd64 "
        "(`envbuilder matrix installable` asks uv and remembers the answer)"
    )
    assert not res.warnings or not any("installab" in w for w in res.warnings)  # a note, not a warning


def test_resolve_shows_what_is_known_of_the_install_set() -> None:
    args = ["resolve", "--framework", "tensorflow==2.14.*", "--driver", "550.54.15", "--gpu", "H100"]
    res = CliRunner().invoke(cli, [*args, "--strategy", "bundled"])
    assert res.exit_code == 0, res.output
    assert "  wheels     resolves (uv " in res.stdout and "python     3.10" in res.stdout
    doc = json.loads(CliRunner().invoke(cli, [*args, "--strategy", "bundled", "--json"]).stdout)
    assert doc["installable"].startswith("resolves (uv ")
    torch = CliRunner().invoke(
        cli, ["resolve", "--framework", "torch==2.5.1", "--driver", "550.54.15", "--gpu", "H100"]
    )
    assert "  wheels     not checked: no known answer for torch==2.5.1, torchaudio==2.5.1" in torch.stdout
    assert "from https://download.pytorch.org/whl/" in torch.stdout


def test_the_key_is_the_whole_install_set_with_companions_and_index(matrix: Matrix) -> None:
    """torch's set: the framework and its companions from its own index; an answer about torch
    alone, or from PyPI, says nothing about it."""
    req = Request(framework="torch", specifier="==2.5.1", python="3.12", strategy="bundled")
    res = resolve(replace(matrix, installable=()), req, h100(matrix))
    assert res.stack is not None
    key = install_key(res.stack.packages, res.stack.companions, res.stack.index_url, "3.12")
    assert key[0] == ("torch==2.5.1", "torchaudio==2.5.1", "torchvision==0.20.1")
    assert key[1] is not None and key[1].startswith("https://download.pytorch.org/whl/")
    assert "from https://download.pytorch.org/whl/" in installability(matrix, res.stack)
    alone = answer(("torch==2.5.1",), "3.12", ok=False, why="x")
    again = resolve(replace(matrix, installable=(alone,)), req, h100(matrix))
    assert again.stack is not None and again.stack.id == res.stack.id
    full = replace(alone, requirements=key[0], index_url=key[1])
    refused = resolve(replace(matrix, installable=(full,)), req, h100(matrix))
    assert refused.stack is not None and refused.stack.id != res.stack.id  # the next build instead
    assert any(r.component == "installable" and r.reason == "x (test)" for r in refused.rejected)


def test_an_arm64_stacks_install_set_is_known_only_by_an_answer_for_arm64(matrix: Matrix) -> None:
    """The aarch64 wheels are other files than the x86_64 ones: uv's answer for linux/amd64 says
    nothing of a linux/arm64 stack's set."""
    req = Request(framework="torch", specifier="==2.15.*", platform="linux/arm64", cpu_only=True)
    res = resolve(replace(matrix, installable=()), req, Host(driver=None))
    stack = res.stack
    assert stack is not None and stack.platform == "linux/arm64"
    key = install_key(stack.packages, stack.companions, stack.index_url, stack.python, "linux/amd64")
    amd = replace(answer(key[0], stack.python, ok=True), index_url=key[1])
    said = installability(replace(matrix, installable=(amd,)), stack)
    assert said.startswith("not checked: ") and f"on Python {stack.python} linux/arm64" in said
    arm = replace(amd, platform="linux/arm64", ok=False, why="no aarch64 wheel")
    assert (
        installability(replace(matrix, installable=(amd, arm)), stack) == "does not resolve: no aarch64 wheel"
    )


def test_a_later_answer_wins_so_the_users_live_answer_overrides_the_committed_one(matrix: Matrix) -> None:
    later = answer((TF_214,), "3.11", ok=True)
    fixed = replace(matrix, installable=(*matrix.installable, later))
    req = Request(framework="tensorflow", specifier="==2.14.*", python="3.11", strategy="bundled")
    res = resolve(fixed, req, h100(matrix))
    assert res.stack is not None and installability(fixed, res.stack) == "resolves (test)"


# --------------------------------------------------------------------------- the files


def test_the_user_cache_round_trips_merges_and_a_damaged_one_is_no_answers(tmp_path: Path) -> None:
    path = tmp_path / "installable.json"
    a = answer((TF_214,), "3.11", ok=False, why="tensorrt==8.5.3.1 has no wheel for cp311 manylinux x86_64")
    known.write_user_answers([a], path)
    known.write_user_answers([answer(("b==1",), "3.12", ok=True)], path)
    assert set(known.read_user_answers(path)) == {a, answer(("b==1",), "3.12", ok=True)}
    known.write_user_answers([replace(a, ok=True, why="")], path)  # same key: replaced
    assert replace(a, ok=True, why="") in known.read_user_answers(path)
    assert len(known.read_user_answers(path)) == 2
    path.write_text('{"answers": [{"requirements": 3')
    assert known.read_user_answers(path) == ()


def test_the_users_answers_come_with_load_matrix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVBUILDER_CACHE_DIR", str(tmp_path))
    mine = answer(("only-here==1",), "3.12", ok=True)
    known.write_user_answers([mine])
    assert load_matrix().installable[-1] == mine


def test_rendered_answers_load_back_and_bad_rows_are_refused(tmp_path: Path) -> None:
    rows = [answer((TF_214,), "3.11", ok=False, why="w"), answer(("a==1", "b==2"), "3.10", ok=True)]
    text = known.render_answers(rows, source="test", reviewed="2026-12-04")
    path = tmp_path / "installable.yaml"
    path.write_text(text)
    from envbuilder.matrix.reader import read_file

    assert set(known.load_answers(read_file(path))) == set(rows)
    for bad, field in (
        ({"ok": "no"}, "ok"),
        ({"ok": False, "why": ""}, "why"),
        ({"platform": "linux/s390x"}, "platform"),
        ({"requirements": []}, "requirements"),
    ):
        row = {**known.answer_to_dict(rows[1]), **bad}
        with pytest.raises(MatrixError, match=field):
            known.load_answers(({"answers": [row]}, Ctx("installable.yaml")))
    twice = [known.answer_to_dict(rows[1])] * 2
    with pytest.raises(MatrixError, match="second answer"):
        known.load_answers(({"answers": twice}, Ctx("installable.yaml")))


def test_every_committed_refusal_says_which_package_lacks_which_wheel(matrix: Matrix) -> None:
    check = CliRunner().invoke(cli, ["matrix", "check"])
    assert check.exit_code == 0 and "ok  generated/installable.yaml: " in check.stdout
    refused = [a for a in matrix.installable if not a.ok]
    assert refused, "the committed answers hold the tensorflow 2.14 / cp311 refusal"
    for a in refused:
        assert " wheel for cp" in a.why, a
        assert a.source.startswith("uv "), a


# --------------------------------------------------------------------------- asking uv (real, offline)


def wheelhouse(folder: Path) -> Path:
    """fw==1.0 (pure) needs trt==8.5 ; trt has CPython 3.10 wheels only (tensorflow 2.14's case)."""
    folder.mkdir()
    make_wheel(folder, "fw-1.0-py3-none-any.whl", requires_dist=("trt==8.5",))
    make_wheel(folder, "trt-8.5-cp310-cp310-manylinux_2_28_x86_64.whl")
    return folder


def test_uv_answers_from_the_metadata_in_the_resolvers_words(tmp_path: Path) -> None:
    ask = live.uv_asker(LockSettings(no_index=True, find_links=(wheelhouse(tmp_path / "w"),)))
    assert ask(known.answer_key(["fw==1.0"], None, "3.10", "linux/amd64")) == WheelCheck(ok=True)
    no = ask(known.answer_key(["fw==1.0"], None, "3.11", "linux/amd64"))
    assert no == WheelCheck(ok=False, why="trt==8.5 has no wheel for cp311 manylinux x86_64")
    arm = ask(known.answer_key(["fw==1.0"], None, "3.10", "linux/arm64"))
    assert arm == WheelCheck(ok=False, why="trt==8.5 has no wheel for cp310 manylinux aarch64")


def test_an_index_that_does_not_answer_leaves_the_set_not_checked() -> None:
    outcome = live.answer_sets(
        [known.answer_key(["fw==1.0"], None, "3.11", "linux/amd64")],
        lambda _k: WheelCheck(ok=False, why="no index answered (dns error)", unknown=True),
        source="uv",
    )
    assert outcome.answers == () and outcome.unknown[0][1] == "no index answered (dns error)"


def test_an_extra_index_host_that_does_not_answer_is_asked_once() -> None:
    """download.pytorch.org is unreachable here: every torch set would cost uv's ~20 s of retries."""
    asked: list[known.Key] = []

    def ask(key: known.Key) -> WheelCheck:
        asked.append(key)
        if key[1]:
            return WheelCheck(ok=False, why="no index answered (Failed to fetch: ...)", unknown=True)
        return WheelCheck(ok=True)

    torch = "https://download.pytorch.org/whl/cu124"
    keys = [known.answer_key(["torch==2.5.1"], torch, py, "linux/amd64") for py in ("3.10", "3.11")]
    keys.append(
        known.answer_key(["torch==2.5.1"], "https://download.pytorch.org/whl/cpu", "3.12", "linux/amd64")
    )
    keys.append(known.answer_key(["jax==0.4.30"], None, "3.12", "linux/amd64"))
    outcome = live.answer_sets(keys, ask, source="uv")
    assert asked == [keys[0], keys[3]] and [a.requirements for a in outcome.answers] == [("jax==0.4.30",)]
    assert [k for k, _ in outcome.unknown] == keys[:3]
    assert outcome.unknown[2][1].startswith("download.pytorch.org did not answer (no index answered")


def test_plain_reason_keeps_what_it_does_not_know() -> None:
    cause = "tensorrt==8.5.3.1 has no wheels with a matching Python ABI tag (e.g., `cp311`)"
    assert (
        live.plain_reason(cause, "3.11", "linux/amd64")
        == "tensorrt==8.5.3.1 has no wheel for cp311 manylinux x86_64"
    )
    plat = "x==1 has no wheels with a matching platform tag (e.g., `manylinux_2_28_x86_64`)"
    assert live.plain_reason(plat, "3.12", "linux/amd64") == "x==1 has no wheel for cp312 manylinux x86_64"
    sdist = "jax>=0.3.15,<=0.4.15 has no usable wheels"
    assert live.plain_reason(sdist, "3.8", "linux/amd64") == (
        "jax>=0.3.15,<=0.4.15 has no usable wheel for cp38 manylinux x86_64 "
        "(source distributions or other tags only)"
    )
    other = "there is no version of foo==9"
    assert live.plain_reason(other, "3.12", "linux/amd64") == other


def test_install_sets_cover_each_strategy_and_python_of_a_release(matrix: Matrix) -> None:
    keys = live.install_sets(matrix, ["tensorflow"], "linux/amd64")
    tf214 = [k for k in keys if k[0] == (TF_214,)]
    assert "3.11" in {k[2] for k in tf214} and "3.10" in {k[2] for k in tf214}
    assert not any(k[2] == "3.12" for k in tf214)  # outside 2.14's Python range: no candidate
    assert all(k[0][0].startswith("tensorflow") for k in keys)


def test_matrix_installable_remembers_answers_in_the_user_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENVBUILDER_CACHE_DIR", str(tmp_path))
    asked: list[str] = []

    def fake(**_kw: object) -> live.Asker:
        def ask(key: known.Key) -> WheelCheck:
            asked.append(key[2])
            if key[0] == (TF_214,) and key[2] == "3.11":
                return WheelCheck(ok=False, why="tensorrt==8.5.3.1 has no wheel for cp311 manylinux x86_64")
            return WheelCheck(ok=True)

        return ask

    monkeypatch.setattr(live, "uv_asker", fake)
    monkeypatch.setattr(live, "uv_version", lambda: "uv 0.0.0")
    r = CliRunner().invoke(
        cli, ["matrix", "installable", "--framework", "tensorflow", "--python", "3.11", "--json"]
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["not_resolving"] == [
        f"{TF_214} py3.11: tensorrt==8.5.3.1 has no wheel for cp311 manylinux x86_64"
    ]
    assert set(asked) == {"3.11"} and doc["written"] is False
    saved = known.read_user_answers(tmp_path / "installable.json")
    assert len(saved) == doc["checked"] and all(a.source.startswith("uv 0.0.0 ") for a in saved)
    bad = CliRunner().invoke(cli, ["matrix", "installable", "--python", "three"])
    assert bad.exit_code == 2 and "Traceback" not in bad.output


# --------------------------------------------------------------------------- set L (2026-12-06)


def test_each_install_set_is_asked_for_the_pythons_of_its_own_kind_of_base_image(matrix: Matrix) -> None:
    """A variant's system-CUDA set is installed on a CUDA base image, its bundled set on a slim
    one: each is asked for the Pythons of its own images. With the CUDA images left out, no
    system set is asked at all (the slim images' Pythons are not theirs)."""
    from envbuilder.matrix.installable import answer_key

    slim_only = replace(matrix, base_images=tuple(b for b in matrix.base_images if b.kind == "slim"))
    keys = set(live.install_sets(slim_only, ["torch", "tensorflow"], "linux/amd64"))
    system = {
        answer_key(
            (*v.system_packages, *(r for _, r in v.companion_packages)), v.index_url, py, "linux/amd64"
        )
        for table in matrix.frameworks
        if table.name in ("torch", "tensorflow")
        for rel in table.releases
        for v in rel.variants
        if v.system_packages and v.cuda is not None and v.system_packages != v.bundled_packages
        for py in sorted({b.python for b in matrix.base_images})
    }
    assert system, "the matrix has system-CUDA sets"
    assert keys and not (keys & system)
    every = set(live.install_sets(matrix, ["torch", "tensorflow"], "linux/amd64"))
    assert every & system and keys < every


# --------------------------------------------------------------------------- --auto attest (2026-12-06)


def test_the_install_sets_are_every_variants_sets_with_all_their_companions(matrix: Matrix) -> None:
    """install_sets' rule spelled out: each variant of each release of the frameworks asked (every
    one, not the first), its bundled set on each slim image's Python and its system set (only a
    CUDA build's) on each CUDA image's, inside the release's range, with every companion."""
    from packaging.specifiers import SpecifierSet

    from envbuilder.matrix.installable import answer_key

    pythons = {k: {b.python for b in matrix.base_images if b.kind == k} for k in ("slim", "cuda")}
    want = {
        answer_key((*packages, *(r for _, r in v.companion_packages)), v.index_url, py, "linux/arm64")
        for table in matrix.frameworks
        if table.name in ("torch", "jax", "tensorflow")
        for rel in table.releases
        for v in rel.variants
        for packages, kind in ((v.bundled_packages, "slim"), (v.system_packages, "cuda"))
        if packages and (kind == "slim" or v.cuda is not None)
        for py in pythons[kind]
        if py in SpecifierSet(rel.python)
    }
    assert any(
        len(v.companion_packages) > 1 for t in matrix.frameworks for r in t.releases for v in r.variants
    )
    assert any(
        not v.bundled_packages and v.system_packages
        for t in matrix.frameworks
        for r in t.releases
        for v in r.variants
    )
    assert set(live.install_sets(matrix, ["jax", "tensorflow", "torch"], "linux/arm64")) == want


def test_a_cpu_builds_set_is_never_asked_for_a_cuda_base_images_python(matrix: Matrix) -> None:
    cuda_only = replace(matrix, base_images=tuple(b for b in matrix.base_images if b.kind == "cuda"))
    cpu_indexes = {
        v.index_url for t in matrix.frameworks if t.name == "torch" for r in t.releases for v in r.variants
    }
    cpu_indexes -= {
        v.index_url
        for t in matrix.frameworks
        if t.name == "torch"
        for r in t.releases
        for v in r.variants
        if v.cuda is not None
    }
    assert cpu_indexes, "torch has CPU builds on their own index"
    keys = live.install_sets(cuda_only, ["torch"], "linux/amd64")
    assert keys and not [k for k in keys if k[1] in cpu_indexes]


def test_the_install_sets_come_by_requirements_then_index_then_python_as_a_version(matrix: Matrix) -> None:
    """One order, whatever the set's: the requirements, then the index (PyPI's None first, never
    compared with a URL), then the Python as a version (3.9 before 3.10)."""
    from packaging.version import Version

    torch = next(t for t in matrix.frameworks if t.name == "torch")
    rel = torch.releases[0]
    cpu = next(v for v in rel.variants if v.cuda is None)
    on_pypi = replace(cpu, index_url=None)  # the CPU build's set from PyPI as well as its own index
    mixed = replace(
        matrix,
        frameworks=tuple(
            replace(t, releases=(replace(rel, variants=(*rel.variants, on_pypi)), *t.releases[1:]))
            if t is torch
            else t
            for t in matrix.frameworks
        ),
    )
    keys = live.install_sets(mixed, ["torch"], "linux/amd64")
    first = [k for k in keys if k[0] == keys[0][0]]
    indexes = list(dict.fromkeys(k[1] for k in first))
    assert indexes[0] is None and indexes[1:] == sorted(i for i in indexes if i is not None)
    assert len(indexes) == len(rel.variants) + 1
    for index in indexes:
        pythons = [k[2] for k in first if k[1] == index]
        assert pythons == sorted(pythons, key=Version) and pythons != sorted(pythons)
    assert keys == sorted(keys, key=lambda k: (k[0], k[1] or "", Version(k[2])))
