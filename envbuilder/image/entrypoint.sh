#!/bin/sh
# envbuilder's entrypoint, copied into every image it builds (/opt/envbuilder/entrypoint.sh).
# Before the command starts, it refuses an NVIDIA driver older than the stack needs
# (ENVBUILDER_MIN_DRIVER, set by the Dockerfile), whatever started the container: docker run,
# Kubernetes, Apptainer, with or without the Container Toolkit (which, in CDI mode, ignores
# NVIDIA_REQUIRE_CUDA: nvidia-container-toolkit#1470). NVIDIA's nvidia_entrypoint.sh reads the
# driver the same way. The rule (driver >= minimum, numerically field by field, as
# packaging.Version orders them) is shared with `envbuilder run`'s check through one case table
# (tests/data/driver_check_cases.yaml). POSIX sh only: no bash, awk or sort -V in the image.
#
#   no GPU driver visible (a CPU container)    the command starts
#   the driver is new enough                   the command starts
#   the driver is too old                      one error line and a hint on stderr, exit 78
#   ENVBUILDER_DISABLE_DRIVER_CHECK=1          the command starts, with a warning
#
# CUDA forward compatibility (a stack resolved with --forward-compat): ENVBUILDER_COMPAT_DRIVER is
# the driver of the image's cuda-compat package; while the host's driver is older, its libraries
# (ENVBUILDER_COMPAT_DIR, default /usr/local/cuda/compat) go first in LD_LIBRARY_PATH, as NVIDIA
# documents (docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html); on a newer
# driver they are left out (the compat libcuda must not run on a newer kernel module).
#
# ENVBUILDER_DRIVER_VERSION_FILE names the file read (default /proc/driver/nvidia/version), so a
# test can stand in a driver the machine does not have.
set -eu
set -f # no globbing: the NVRM line is split into words below

version_file="${ENVBUILDER_DRIVER_VERSION_FILE:-/proc/driver/nvidia/version}"
need="${ENVBUILDER_MIN_DRIVER:-}"

# The kernel module's version: the first word of the NVRM line shaped like 580.159.04 or 535.104.
driver_version() {
    [ -r "$1" ] || return 0
    while IFS= read -r line || [ -n "$line" ]; do
        case "$line" in
        "NVRM version:"*)
            for word in $line; do
                case "$word" in
                [0-9][0-9][0-9].[0-9]* | [0-9][0-9][0-9][0-9].[0-9]*)
                    case "$word" in *[!0-9.]*) continue ;; esac
                    printf '%s\n' "$word"
                    return 0
                    ;;
                esac
            done
            ;;
        esac
    done <"$1"
}

# 0 when $1 >= $2, comparing dot-separated numbers (missing fields are 0; 04 is 4, not octal).
version_ge() {
    a="$1" b="$2"
    while [ -n "$a" ] || [ -n "$b" ]; do
        x="${a%%.*}" y="${b%%.*}"
        case "$a" in *.*) a="${a#*.}" ;; *) a="" ;; esac
        case "$b" in *.*) b="${b#*.}" ;; *) b="" ;; esac
        x="${x#"${x%%[!0]*}"}" y="${y#"${y%%[!0]*}"}"
        x="${x:-0}" y="${y:-0}"
        [ "$x" -gt "$y" ] && return 0
        [ "$x" -lt "$y" ] && return 1
    done
    return 0
}

if [ -n "$need" ]; then
    have="$(driver_version "$version_file")"
    if [ -n "$have" ] && ! version_ge "$have" "$need"; then
        if [ "${ENVBUILDER_DISABLE_DRIVER_CHECK:-}" = 1 ]; then
            echo "envbuilder: warning: NVIDIA driver $have is older than the $need this image needs;" \
                "starting anyway (ENVBUILDER_DISABLE_DRIVER_CHECK=1)" >&2
        else
            echo "envbuilder: error: this image needs NVIDIA driver >= $need, but the host's driver" \
                "is $have ($version_file): CUDA in this image would fail to initialise" >&2
            echo "hint: upgrade the host's driver to >= $need, or build the image for this host" \
                "(envbuilder build SPEC --driver $have); ENVBUILDER_DISABLE_DRIVER_CHECK=1 starts it anyway" >&2
            exit 78
        fi
    fi
fi

compat="${ENVBUILDER_COMPAT_DRIVER:-}"
compat_dir="${ENVBUILDER_COMPAT_DIR:-/usr/local/cuda/compat}"
if [ -n "$compat" ]; then
    have="$(driver_version "$version_file")"
    if [ -n "$have" ] && ! version_ge "$have" "$compat" && [ -d "$compat_dir" ]; then
        LD_LIBRARY_PATH="$compat_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        export LD_LIBRARY_PATH
    fi
fi

if [ "$#" -eq 0 ]; then
    set -- /bin/sh
fi
exec "$@"
