# What Kata does with the pod shapes of docs/kata-compatibility.md, on the
# real Kata node of tests/kata/node.sh (sourced by it, after its own
# checks). For each rule whose shape this node can express:
#   - the shape under Kata (the class set by hand: the policy leaves a pod
#     that names a class alone): does it start, and does it behave;
#   - the same shape under runc (in Kubewarden's namespace, which the
#     webhook leaves out), so that a failure under Kata is Kata's and not
#     the node's;
#   - and a control: the pod without the finding must start under Kata.
# Each rule ends as "confirmed" (Kata fails it as the document says),
# "refuted" (Kata runs it: a test failure for a default rule, whose default
# must change; a note for an opt-in one) or "not expressible here" (runc
# fails it too, or the node lacks what it needs), printed as a line
# "# finding: RULE | VERDICT | WHAT HAPPENED".
# With KATA_REPORT=FILE the rows also go to FILE as a Markdown table.

RUNC_NS=$KW_NAMESPACE
REPORT=${KATA_REPORT:-/dev/null}
{
  echo "| rule | on real Kata | what happened under Kata | under runc (reference) |"
  echo "|---|---|---|---|"
} >"$REPORT"

# probe NS NAME SCRIPT [JQ]: a pod in NS that runs SCRIPT once (sh -c,
# restartPolicy Never), changed by JQ; waits for it to settle. RESULT is
# what it printed, or why it did not run ("not started: ...", with the
# waiting reason and message, or the events).
probe() {
  local ns=$1 name=$2 script=$3 jq=${4:-.} saved=$NS
  jq -n --arg n "$name" --arg s "$script" '{apiVersion: "v1", kind: "Pod", metadata: {name: $n}, spec: {
    automountServiceAccountToken: false, terminationGracePeriodSeconds: 1, restartPolicy: "Never",
    containers: [{name: "probe", image: "localhost/kata-probe:1", imagePullPolicy: "Never",
      command: ["/bin/sh", "-c", $s]}]}}' | jq "$jq" >"$D/$ns-$name.json"
  if ! out=$(k -n "$ns" create -f "$D/$ns-$name.json" 2>&1); then
    RESULT="refused by the API server: $(one_line "$out" | cut -c1-300)"
    PHASE=refused
    return
  fi
  NS=$ns
  until_settled "$name" done
  NS=$saved
  RESULT=$(k -n "$ns" logs "$name" 2>/dev/null | tr '\n' ' ' | sed 's/ *$//' | cut -c1-300 || true)
  # Nothing printed: how the container ended says why, else the pod's
  # own status (the kubelet's admission refuses a pod with a reason).
  [[ -n $RESULT ]] || RESULT=$(jq -r '[.status.containerStatuses[]?.state.terminated // empty
    | "exit \(.exitCode) (\(.reason // "")\(if .message then ": " + .message else "" end))"]
    + [.status | select(.reason) | "\(.reason): \(.message // "")"] | join("; ")' <<<"$POD" | tr -s ' \n' ' ' | cut -c1-300)
  if [[ $PHASE == Running ]]; then
    RESULT="still running after 300 s: $RESULT"
  elif [[ $PHASE != Succeeded && $PHASE != Failed ]]; then
    RESULT="not started ($PHASE): $(jq -r '[.status.containerStatuses[]?.state.waiting | "\(.reason): \(.message // "")"] | join("; ")' <<<"$POD" | cut -c1-300) $(NS=$ns pod_events "$name" | { grep -o 'Failed[^;]*;' || true; } | head -2 | tr -d '\n' | cut -c1-300)"
  fi
  CLASS_GOT=$(jq -r '.spec.runtimeClassName // "runc"' <<<"$POD")
  k -n "$ns" delete pod "$name" --wait=false >/dev/null 2>&1 || true
}

# under_kata NAME SCRIPT [JQ] / under_runc NAME SCRIPT [JQ]: probe under
# Kata (the class set by hand) or under runc; KATA / RUNC what each printed.
under_kata() {
  probe "$NS" "$1" "$2" "${3:-.} | .spec.runtimeClassName = \"$CLASS\""
  KATA=$RESULT
  [[ $CLASS_GOT == "$CLASS" ]] || KATA="(not under Kata: class $CLASS_GOT) $KATA"
}
under_runc() {
  probe "$RUNC_NS" "$1" "$2" "${3:-.}"
  RUNC=$RESULT
}

# verdict RULE VERDICT: the finding's line, its row, and the test result
# (refuted fails, unless the rule is opt-in: by default the policy would
# keep Kata from pods Kata runs).
OPT_IN="privileged seccomp appArmor seLinux subPath memoryEmptyDirLimit"
verdict() {
  echo "# finding: $1 | $2 | Kata: $KATA | runc: $RUNC"
  echo "| \`$1\` | $2 | ${KATA//|/\\|} | ${RUNC//|/\\|} |" >>"$REPORT"
  case $2 in
  confirmed*) pass "$1 on real Kata: $2 (Kata: $KATA; runc: $RUNC)" ;;
  refuted*)
    if [[ " $OPT_IN " == *" $1 "* ]]; then
      pass "$1 on real Kata: $2, and it is opt-in, off by default (Kata: $KATA; runc: $RUNC)"
    else
      fail "$1 on real Kata: $2 (Kata: $KATA; runc: $RUNC)"
    fi
    ;;
  *) echo "# SKIP $1 on real Kata: $2 (Kata: $KATA; runc: $RUNC)" ;;
  esac
}

# control NAME SCRIPT WANT [JQ]: the pod without the finding starts under
# Kata and prints WANT.
control() {
  under_kata "$1" "$2" "${4:-.}"
  if [[ $KATA == "$3" ]]; then
    pass "control for $1: the pod without the finding runs under Kata ($KATA)"
  else
    fail "control for $1: under Kata it printed '$KATA', not '$3'"
  fi
}

echo "# the findings of docs/kata-compatibility.md on real Kata"
HOSTDIR=$D/host
mkdir -p "$HOSTDIR/share" "$HOSTDIR/sock" "$HOSTDIR/prop"
echo hello-from-host >"$HOSTDIR/share/hello"
# vol PATH TYPE MOUNT [PROPAGATION]: the jq filter that gives the pod a
# hostPath volume of PATH (TYPE), mounted at MOUNT.
vol() {
  local v m
  v=$(jq -cn --arg p "$1" --arg t "$2" '{name: "h", hostPath: {path: $p, type: $t}}')
  m=$(jq -cn --arg m "$3" --arg prop "${4:-}" '{name: "h", mountPath: $m} + (if $prop == "" then {} else {mountPropagation: $prop} end)')
  echo ".spec.volumes = [$v] | .spec.containers[0].volumeMounts = [$m]"
}

# hostSockets: a UNIX socket on the host, served by python3, mounted by
# hostPath (type Socket).
python3 -c '
import os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1]); s.listen(8)
while True:
    c, _ = s.accept(); c.recv(64); c.sendall(b"pong\n"); c.close()
' "$HOSTDIR/sock/host.sock" &
SOCK_SERVER=$!
for _ in $(seq 1 50); do [[ -S $HOSTDIR/sock/host.sock ]] && break; sleep 0.1; done
under_kata host-socket 'sockprobe /run/host.sock' "$(vol "$HOSTDIR/sock/host.sock" Socket /run/host.sock)"
under_runc host-socket 'sockprobe /run/host.sock' "$(vol "$HOSTDIR/sock/host.sock" Socket /run/host.sock)"
if [[ $RUNC != "connected: pong" ]]; then
  verdict hostSockets "not expressible here: the socket does not answer under runc either"
elif [[ $KATA == "connected: pong" ]]; then
  verdict hostSockets "refuted: the container reached the host's socket"
elif [[ $KATA == *StartError* ]]; then
  verdict hostSockets "confirmed: the container does not even start"
else
  verdict hostSockets "confirmed: the container cannot reach the host's socket"
fi
kill "$SOCK_SERVER" 2>/dev/null || true
control host-dir 'cat /host/hello' hello-from-host "$(vol "$HOSTDIR/share" Directory /host)"

# hostDevices: the host's /dev/kvm (this machine has one; the guest has
# none), privileged so that runc lets the container open it.
priv='.spec.containers[0].securityContext = {privileged: true}'
under_kata host-device 'exec 3<>/host-kvm && echo opened || echo failed' "$(vol /dev/kvm CharDevice /host-kvm) | $priv"
under_runc host-device 'exec 3<>/host-kvm && echo opened || echo failed' "$(vol /dev/kvm CharDevice /host-kvm) | $priv"
if [[ $RUNC != opened* ]]; then
  verdict hostDevices "not expressible here: the device does not open under runc either"
elif [[ $KATA == opened* ]]; then
  verdict hostDevices "refuted: the host's device opened in the container"
elif [[ $KATA == *StartError* ]]; then
  verdict hostDevices "confirmed: the container does not even start"
else
  verdict hostDevices "confirmed: the node in the container is the guest's, and it does not open"
fi

# mountPropagation: a shared host folder with HostToContainer. Two host
# mounts in it: one made before the pod is created, one made after its
# container started; each must be seen in the container.
mount --bind "$HOSTDIR/prop" "$HOSTDIR/prop"
mount --make-rshared "$HOSTDIR/prop"
mkdir -p "$HOSTDIR/prop/before" "$HOSTDIR/prop/after"
prop_script='if [ -e /prop/before/marker ]; then b=seen; else b=unseen; fi
for i in $(seq 1 60); do [ -e /prop/after/marker ] && break; sleep 1; done
if [ -e /prop/after/marker ]; then a=seen; else a=unseen; fi
echo "earlier mount $b, later mount $a"'
prop_pod() { # NS NAME: the earlier mount now, the later one once NAME runs
  local ns=$1 name=$2
  mount -t tmpfs tmp "$HOSTDIR/prop/before" && touch "$HOSTDIR/prop/before/marker"
  (
    for _ in $(seq 1 150); do
      [[ $(k -n "$ns" get pod "$name" -o jsonpath='{.status.phase}' 2>/dev/null) == Running ]] && break
      sleep 2
    done
    sleep 3
    mount -t tmpfs tmp "$HOSTDIR/prop/after" && touch "$HOSTDIR/prop/after/marker"
  ) &
  PROP_PID=$!
}
prop_unmount() { umount "$HOSTDIR/prop/before" "$HOSTDIR/prop/after" 2>/dev/null || true; }
prop_pod "$NS" prop
under_kata prop "$prop_script" "$(vol "$HOSTDIR/prop" Directory /prop HostToContainer)"
wait "$PROP_PID" || true
prop_unmount
prop_pod "$RUNC_NS" prop
under_runc prop "$prop_script" "$(vol "$HOSTDIR/prop" Directory /prop HostToContainer)"
wait "$PROP_PID" || true
prop_unmount
if [[ $RUNC != "earlier mount seen, later mount seen" ]]; then
  verdict mountPropagation "not expressible here: runc did not see both host mounts"
elif [[ $KATA == "earlier mount seen, later mount seen" ]]; then
  verdict mountPropagation "refuted: both host mounts reached the container"
elif [[ $KATA == "earlier mount unseen"* ]]; then
  verdict mountPropagation "confirmed in part: the host's mounts that exist when the container starts never reach it (later ones do)"
else
  verdict mountPropagation "confirmed: the host's later mounts never reach the container"
fi

# hostNamespaces: hostNetwork (the host's interfaces: this machine's
# kata-e2e0 bridge), hostPID (the host's PID 1 is not the container's
# sandbox).
under_kata host-network 'ip link show kata-e2e0 >/dev/null 2>&1 && echo host-network || echo own-network' '.spec.hostNetwork = true'
under_runc host-network 'ip link show kata-e2e0 >/dev/null 2>&1 && echo host-network || echo own-network' '.spec.hostNetwork = true'
if [[ $RUNC != host-network ]]; then
  verdict hostNamespaces "not expressible here: runc did not join the host's network"
elif [[ $KATA == host-network ]]; then
  verdict hostNamespaces "refuted: the container joined the host's network"
else
  verdict hostNamespaces "confirmed: the container is not in the host's network"
fi

# privileged (opt-in): with privileged_without_host_devices = true, it
# runs under Kata with every capability, and sees the VM's devices.
under_kata privileged 'grep CapEff /proc/self/status | tr -s " \t" " "; test -e /dev/kvm && echo host-devices || echo vm-devices' "$priv"
under_runc privileged 'grep CapEff /proc/self/status | tr -s " \t" " "; test -e /dev/kvm && echo host-devices || echo vm-devices' "$priv"
if [[ $KATA == *vm-devices* && $KATA == CapEff* ]]; then
  verdict privileged "confirmed (runs): under Kata it runs, with the VM's devices"
else
  verdict privileged "not as documented: it does not run under Kata as the document says"
fi

# seccomp (opt-in): RuntimeDefault, enforced by runc (Seccomp: 2); in
# the guest only when the runtime's disable_guest_seccomp is false.
seccomp='.spec.securityContext = {seccompProfile: {type: "RuntimeDefault"}}'
under_kata seccomp 'grep "^Seccomp:" /proc/self/status | tr -s " \t" " "' "$seccomp"
under_runc seccomp 'grep "^Seccomp:" /proc/self/status | tr -s " \t" " "' "$seccomp"
if [[ $RUNC != "Seccomp: 2" ]]; then
  verdict seccomp "not expressible here: runc did not enforce the profile"
elif [[ $KATA == "Seccomp: 0" ]]; then
  verdict seccomp "confirmed: the profile is not enforced in the guest"
else
  verdict seccomp "refuted: the guest enforced the profile"
fi

# subPath (opt-in): a file written through a subPath mount of an emptyDir,
# read back by a second container through the whole volume.
subpath='.spec.volumes = [{name: "e", emptyDir: {}}]
  | .spec.initContainers = [.spec.containers[0] | .name = "writer"
      | .command = ["/bin/sh", "-c", "echo through-subpath > /sub/file"]
      | .volumeMounts = [{name: "e", mountPath: "/sub", subPath: "a"}]]
  | .spec.containers[0].volumeMounts = [{name: "e", mountPath: "/all"}]'
under_kata subpath 'cat /all/a/file' "$subpath"
under_runc subpath 'cat /all/a/file' "$subpath"
if [[ $RUNC != through-subpath ]]; then
  verdict subPath "not expressible here: runc did not run it"
elif [[ $KATA == through-subpath ]]; then
  verdict subPath "refuted (works here): the file written through the subPath is in the volume"
else
  verdict subPath "confirmed: the file written through the subPath is not in the volume"
fi

# memoryEmptyDirLimit (opt-in): 4 MiB into a memory emptyDir limited to 1Mi.
memlimit='.spec.volumes = [{name: "m", emptyDir: {medium: "Memory", sizeLimit: "1Mi"}}]
  | .spec.containers[0].volumeMounts = [{name: "m", mountPath: "/m"}]'
mem_script='dd if=/dev/zero of=/m/f bs=1M count=4 2>/dev/null && echo wrote-4MiB || echo refused'
under_kata memlimit "$mem_script" "$memlimit"
under_runc memlimit "$mem_script" "$memlimit"
if [[ $RUNC != refused ]]; then
  verdict memoryEmptyDirLimit "not expressible here: runc did not enforce the limit"
elif [[ $KATA == wrote-4MiB ]]; then
  verdict memoryEmptyDirLimit "confirmed: the size limit is ignored"
else
  verdict memoryEmptyDirLimit "refuted: the guest enforced the limit"
fi

# The kubelet refuses these before any runtime sees them unless the
# container runtime reports the feature (CRI status.features, the runtime
# handlers' features): userNamespaces, recursive read-only mounts,
# supplementalGroupsPolicy Strict; image volumes need the CRI's image
# volume support. Run under both, what happened is recorded.
for spec in "userNamespaces|.spec.hostUsers = false" \
  "supplementalGroupsPolicy Strict|.spec.securityContext = {supplementalGroupsPolicy: \"Strict\"}" \
  "recursive read-only|$(vol "$HOSTDIR/share" Directory /host) | .spec.containers[0].volumeMounts[0] += {readOnly: true, recursiveReadOnly: \"Enabled\"}" \
  "imageVolumes|.spec.volumes = [{name: \"i\", image: {reference: \"localhost/kata-probe:1\", pullPolicy: \"Never\"}}] | .spec.containers[0].volumeMounts = [{name: \"i\", mountPath: \"/i\"}]"; do
  rule=${spec%%|*}
  name=$(tr ' A-Z' '-a-z' <<<"$rule")
  under_kata "$name" 'echo started' "${spec#*|}"
  under_runc "$name" 'echo started' "${spec#*|}"
  if [[ $RUNC != started ]]; then
    verdict "$rule" "not expressible here: runc did not run it either (the node's containerd reports no such feature)"
  elif [[ $KATA == started ]]; then
    verdict "$rule" "refuted: it ran under Kata"
  else
    verdict "$rule" "confirmed: it does not run under Kata"
  fi
done
umount -l "$HOSTDIR/prop" 2>/dev/null || true
