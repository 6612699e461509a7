#!/usr/bin/env bash
# Kata's own shim and agent start a container, without a kubelet: a private
# containerd (Debian's) with the kit's containerd-shim-kata-v2 on its PATH,
# and `ctr run --runtime io.containerd.kata.v2` on an image made here from
# the node's static busybox (nothing is pulled). Checks:
#   - the container runs in a VM: `uname -r` there is the kit's guest
#     kernel, not this machine's, and the machine it sees is QEMU's;
#   - the container's exit status comes back through the agent and shim;
#   - after each run, nothing is left: no task, no container, no QEMU,
#     virtiofsd or vhost-device-vsock process of the sandbox.
#
#   tests/kata/ctr.sh         (make e2e-kata; KATA_KIT=DIR, else
#                              ../shared/kata-kit; KEEP=1 keeps the logs)
#
# Without a kit it prints one SKIP line and succeeds. Root is needed (a
# containerd of its own, VMs).
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/kata/kit.sh
find_kit "Kata sandbox under ctr"
[[ $(id -u) -eq 0 ]] || kit_die "the Kata suite runs containerd and VMs: run it as root"
kit_packages

D=$(mktemp -d /tmp/kata-ctr.XXXXXX)
KEEP=${KEEP:-0}
CONTAINERD_PID=""
cleanup() {
  [[ -z $CONTAINERD_PID ]] || kill "$CONTAINERD_PID" 2>/dev/null || true
  wait 2>/dev/null || true
  if [[ $KEEP == 1 || ${FAILED:-0} -gt 0 ]]; then kit_log "logs kept in $D"; else rm -rf "$D"; fi
}
trap cleanup EXIT

FAILED=0 PASSED=0
fail() {
  echo "not ok - $*"
  FAILED=$((FAILED + 1))
}
pass() {
  echo "ok - $*"
  PASSED=$((PASSED + 1))
}
one_line() { local t=${1%$'\n'}; echo "${t//$'\n'/; }"; }

echo "# Kata under ctr: kit of kata-containers $KIT_COMMIT, guest kernel $GUEST_KERNEL"
kit_config "$D/configuration.toml"
probe_image "$D/image" "$D/probe.tar" localhost/kata-probe:1

cat >"$D/containerd.toml" <<EOF
version = 2
root = "$D/root"
state = "$D/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$D/containerd.sock"
[ttrpc]
  address = "$D/containerd.sock.ttrpc"
EOF
PATH=$KIT/bin:$PATH containerd --config "$D/containerd.toml" --log-level debug >"$D/containerd.log" 2>&1 &
CONTAINERD_PID=$!
for _ in $(seq 1 100); do
  [[ -S $D/containerd.sock ]] && break
  sleep 0.1
done
[[ -S $D/containerd.sock ]] || kit_die "containerd did not start: $(tail -5 "$D/containerd.log")"
CTR=(ctr --address "$D/containerd.sock" -n kata-e2e)
"${CTR[@]}" images import "$D/probe.tar" >/dev/null

# kata_run ID CMD...: the image's CMD in a Kata sandbox named ID; OUT what
# it printed (stdout and stderr), RC ctr's status, SECS how long it took.
kata_run() {
  local id=$1 t0
  shift
  t0=$(date +%s)
  OUT=$(timeout 600 "${CTR[@]}" run --rm --runtime io.containerd.kata.v2 \
    --runtime-config-path "$D/configuration.toml" localhost/kata-probe:1 "$id" "$@" 2>&1; echo "~$?")
  RC=${OUT##*~}
  OUT=${OUT%~*}
  SECS=$(($(date +%s) - t0))
}

# leftovers ID: what of sandbox ID is still there (tasks, containers,
# processes naming it), "" when nothing.
leftovers() {
  local id=$1 left=""
  "${CTR[@]}" tasks ls -q 2>/dev/null | grep -qx "$id" && left+=" task"
  "${CTR[@]}" containers ls -q 2>/dev/null | grep -qx "$id" && left+=" container"
  for p in qemu-system virtiofsd vhost-device-vsock containerd-shim-kata-v2; do
    pgrep -f "$p.*$id" >/dev/null && left+=" $p"
  done
  echo "$left"
}

# until_clean ID: waits up to 30 s for leftovers ID to be empty.
until_clean() {
  local left
  for _ in $(seq 1 60); do
    left=$(leftovers "$1")
    [[ -z $left ]] && return 0
    sleep 0.5
  done
  echo "$left"
}

host_kernel=$(uname -r)
kata_run probe-uname sh -c 'uname -r; cat /sys/class/dmi/id/sys_vendor'
mapfile -t got <<<"$OUT"
if [[ $RC == 0 && ${got[0]:-} == "$GUEST_KERNEL" && $GUEST_KERNEL != "$host_kernel" && ${got[1]:-} == QEMU ]]; then
  pass "a container under io.containerd.kata.v2 runs in a VM: uname -r '${got[0]}' (the host's is $host_kernel), machine '${got[1]}', in ${SECS} s"
else
  fail "ctr run under io.containerd.kata.v2: exit $RC, printed '$(one_line "$OUT")' (want '$GUEST_KERNEL' then 'QEMU'; host kernel $host_kernel)"
fi
left=$(until_clean probe-uname || true)
if [[ -z $left ]]; then
  pass "after the run, nothing of the sandbox is left (task, container, QEMU, virtiofsd, vhost-device-vsock, shim)"
else
  fail "after the run, left:$left"
fi

kata_run probe-exit sh -c 'echo bye; exit 7'
if [[ $RC == 7 && $OUT == bye* ]]; then
  pass "the container's exit status (7) comes back through the agent and the shim, in ${SECS} s"
else
  fail "a container that exits 7: ctr exit $RC, printed '$(one_line "$OUT")'"
fi
left=$(until_clean probe-exit || true)
[[ -z $left ]] && pass "after a failing container, nothing of the sandbox is left" || fail "after a failing container, left:$left"

echo "# Kata under ctr: $PASSED passed, $FAILED failed"
((FAILED == 0))
