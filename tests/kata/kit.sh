# The Kata kit: upstream Kata Containers' shim (runtime-rs,
# containerd-shim-kata-v2) and agent, prebuilt for machines without a usable
# KVM (QEMU under TCG, the agent's vsock carried by vhost-device-vsock). The
# project does not build it: it is handed over beside the other real hosts.
# docs/real-kata.md describes the layout the suites read:
#
#   bin/containerd-shim-kata-v2  bin/vhost-device-vsock  bin/virtiofsd
#   share/vmlinuz  share/initrd.img  share/guest-kernel-release
#   configuration.toml.in        (@KIT@ stands for the kit's folder)
#   KIT                          (key=value: kata_commit, built, patches)
#   SHA256SUMS                   (of every file above but itself)
#
# Sourced by the Kata suites. find_kit sets KIT, or prints one SKIP line
# and exits 0 when there is none: KATA_KIT, else ../shared/kata-kit next to
# the checkout.

kit_log() { echo "[kata $(date +%T)] $*" >&2; }
kit_die() {
  kit_log "ERROR: $*"
  exit 1
}

# kit_value KEY: KEY's value in the kit's KIT file.
kit_value() { sed -n "s/^$1=//p" "$KIT/KIT" | head -1; }

find_kit() {
  local dir
  KIT=""
  for dir in "${KATA_KIT:-}" ../shared/kata-kit; do
    if [[ -n $dir && -f $dir/KIT ]]; then
      KIT=$(cd "$dir" && pwd)
      break
    fi
  done
  if [[ -z $KIT ]]; then
    if [[ -n ${KATA_KIT:-} ]]; then
      kit_die "KATA_KIT=$KATA_KIT has no KIT file: not a Kata kit (docs/real-kata.md)"
    fi
    echo "SKIP $1: no Kata kit (set KATA_KIT to one, or put it in ../shared/kata-kit; docs/real-kata.md)"
    exit 0
  fi
  local f
  for f in bin/containerd-shim-kata-v2 bin/vhost-device-vsock bin/virtiofsd share/vmlinuz \
    share/initrd.img share/guest-kernel-release configuration.toml.in SHA256SUMS; do
    [[ -e $KIT/$f ]] || kit_die "the kit in $KIT has no $f (docs/real-kata.md)"
  done
  (cd "$KIT" && sha256sum --quiet -c SHA256SUMS) || kit_die "the kit in $KIT does not match its SHA256SUMS"
  GUEST_KERNEL=$(cat "$KIT/share/guest-kernel-release")
  KIT_COMMIT=$(kit_value kata_commit)
  [[ -n $KIT_COMMIT ]] || kit_die "the kit's KIT file names no kata_commit"
}

# kit_packages: the node's Debian packages (containerd and its tools, QEMU,
# the image tools), installed when missing.
kit_packages() {
  local missing=() p sudo=""
  for p in containerd:containerd ctr:containerd runc:runc qemu-system-x86_64:qemu-system-x86 \
    umoci:umoci skopeo:skopeo busybox:busybox-static; do
    command -v "${p%%:*}" >/dev/null || missing+=("${p#*:}")
  done
  ((${#missing[@]} == 0)) && return 0
  [[ $(id -u) -eq 0 ]] || sudo=sudo
  kit_log "installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# kit_config OUT: the kit's configuration.toml for its folder.
kit_config() { sed "s|@KIT@|$KIT|g" "$KIT/configuration.toml.in" >"$1"; }

# probe_image DIR TAR NAME: a one-layer image of the node's static busybox
# (Debian's busybox-static) and tests/kata/sockprobe.c (built static), as
# an image archive that ctr imports as NAME, made with umoci and skopeo:
# nothing is pulled.
probe_image() {
  local dir=$1 tar=$2 name=$3 a
  umoci init --layout "$dir/oci" >/dev/null
  umoci new --image "$dir/oci:probe" >/dev/null
  umoci unpack --image "$dir/oci:probe" "$dir/bundle" >/dev/null
  mkdir -p "$dir/bundle/rootfs/bin" "$dir/bundle/rootfs/tmp"
  cp "$(command -v busybox)" "$dir/bundle/rootfs/bin/busybox"
  for a in sh cat uname ls echo sleep id mount nc wc head grep httpd mkdir wget stat dd timeout; do
    ln -sf busybox "$dir/bundle/rootfs/bin/$a"
  done
  gcc -static -O2 -o "$dir/bundle/rootfs/bin/sockprobe" tests/kata/sockprobe.c
  umoci repack --image "$dir/oci:probe" "$dir/bundle" >/dev/null
  umoci config --image "$dir/oci:probe" --config.cmd /bin/sh --config.env PATH=/bin >/dev/null
  skopeo copy -q "oci:$dir/oci:probe" "docker-archive:$tar:$name" >/dev/null
}
