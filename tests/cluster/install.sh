# README.md's install path ("## Install"), every command as written and in
# order, from a cluster with no policy, no PolicyServer and no RBAC for it:
# the examples as they ship (kata-deploy 4.x's class kata-qemu-runtime-rs,
# the dedicated PolicyServer, the dry run, then protect mode), and the smoke
# test's outputs as README.md shows them. What this control plane cannot run
# is played by the suite, and only that:
# - `helm install` of kata-deploy and Kubewarden: the class is
#   examples/runtimeclass-kata-qemu-runtime-rs.yaml (kata-deploy 4.1.0's,
#   applied by run.sh), the kata nodes are run.sh's, labelled as kata-deploy
#   labels them; Kubewarden's CRDs are installed, and its controller's part
#   is controller.sh's, played where README.md waits for it;
# - `kubectl logs` of policy-server's pods: the same pipeline reads the log
#   of the policy-server the controller started (there are no pods);
# - the ServiceAccount controller's default account in a new namespace.
# Sourced by run.sh near its end, after every other policy is gone.

echo "# README.md's install path, as written"
if [[ -z $CRDS ]]; then
  echo "SKIP README.md's install path: $CRDS_MISSING"
else
  source tests/cluster/controller.sh
  # A cluster before step 2: no policy, PolicyServer, webhook or RBAC.
  controller_clean_slate
  k delete -f examples/policy-server.yaml -f examples/rbac.yaml >/dev/null
  # The cluster README.md's smoke test shows: two kata workers that take a
  # plain pod and no master-pinned one (the suite's other kata nodes, each
  # in a pool of its own, step aside until the end).
  k taint node worker-2 dedicated=db:NoSchedule- >/dev/null
  ASIDE=$(k get nodes -l 'katacontainers.io/kata-runtime=true' -o name | grep -vxE 'node/worker-[12]' || true)
  for n in $ASIDE; do k label "$n" katacontainers.io/kata-runtime- >/dev/null; done
  # The metrics: each policy-server the controller starts exports them
  # every second to an OpenTelemetry receiver (otlpsink.py), as a
  # PolicyServer's go to its collector.
  free_port SINK_PORT 24600
  start_bg otlp-sink python3 tests/cluster/otlpsink.py "$SINK_PORT"
  wait_http "http://127.0.0.1:$SINK_PORT/healthz" 20 || die "otlpsink.py not answering ($D/otlp-sink.log)"
  PS_METRICS=http://127.0.0.1:$SINK_PORT
  INSTALL_MODULE=$(yaml_objects examples/cluster-admission-policy.yaml | jq -r .spec.module)
  MODULES[$INSTALL_MODULE]=$POLICY_FILE
  CONTROLLER_LOG_LEVEL=info

  # evaluations POLICY NAMESPACE: what policy-server exported for POLICY's
  # Pod CREATEs in NAMESPACE, "code:accepted=count" per series, sorted
  # (code "-" when there is none), from what the receiver holds.
  evaluations() {
    curl -sf "http://127.0.0.1:$SINK_PORT/metrics" | jq -rs --arg p "clusterwide-$1" --arg ns "$2" '
      [.[] | select(.name == "kubewarden_policy_evaluations_total" and .labels.policy_name == $p
        and .labels.resource_namespace == $ns and .labels.resource_kind == "Pod" and .labels.request_origin == "validate")
        | "\(.labels.error_code // "-"):\(if .labels.accepted then "accepted" else "refused" end)=\(.value)"] | sort | join(" ")'
  }
  # until_evaluations POLICY NAMESPACE WANT: evaluations matches WANT (a
  # bash pattern), within
  # 10 s (the export interval is 1 s); EVALUATIONS what it was last.
  until_evaluations() {
    local end=$(($(date +%s) + 10))
    # shellcheck disable=SC2053 # WANT may be a pattern
    until EVALUATIONS=$(evaluations "$1" "$2") && [[ $EVALUATIONS == $3 ]]; do
      (($(date +%s) < end)) || return 1
      sleep 0.5
    done
  }
  # install_probe FILE NAME: creates FILE's pod as NAME in install-probe;
  # PROBED the name the dry run judged. A first call into a policy-server
  # that has just started can outlast the webhook's timeout on a loaded
  # machine, and then the pod is admitted without a decision (failing open,
  # as a dry run does): told apart from a failure by kube-apiserver's log
  # and probed once more as NAME-again. PROBE_RETRIED counts those.
  PROBE_RETRIED=0
  install_probe() {
    local before timeouts
    before=$(wc -l <"$D/kube-apiserver.log")
    PROBED=$2
    manifest_json "$1" | jq --arg n "$2" '.metadata.name = $n' | k -n install-probe create -f - >/dev/null 2>&1
    timeouts=$(tail -n +"$((before + 1))" "$D/kube-apiserver.log" | grep -F 'failing open clusterwide-kata-runtime-dry-run' || true)
    [[ $2 != *-again && -n $timeouts && $timeouts != *"connection refused"* &&
      $timeouts =~ (deadline exceeded|Client\.Timeout) ]] || return 0
    echo "# note: install-probe/$2 failed open on a webhook timeout ($(one_line "$(head -1 <<<"$timeouts" | cut -c1-300)")); probed again as $2-again"
    PROBE_RETRIED=$((PROBE_RETRIED + 1))
    install_probe "$1" "$2-again"
  }
  readme_section "Install"
  steps=0 played=""
  for i in "${!SECTION_CMDS[@]}"; do
    cmd=${SECTION_CMDS[i]}
    case $cmd in
    "helm "*)
      played+=" \`${cmd%% --*}\`;"
      continue
      ;;
    *" logs -l kubewarden/policy-server="*)
      # The dry run's decisions, for a plain pod and the master-pinned one
      # that the workloads would create meanwhile.
      k create namespace install-probe >/dev/null
      k -n install-probe create serviceaccount default >/dev/null
      install_probe tests/cluster/pods/plain.yaml plain
      PLAIN=$PROBED
      install_probe tests/cluster/pods/seed.yaml seed
      SEED=$PROBED
      run=${cmd/kubectl -n kubewarden logs -l kubewarden\/policy-server=kata-runtime-policy \\$'\n'  --prefix --tail=-1 --since=1h/cat $D/${PS_PROC[kata-runtime-policy]}.log}
      [[ $run != "$cmd" ]] || die "README.md's logs command is not the one install.sh reads the log for: $cmd"
      ;;
    *) run=$cmd ;;
    esac
    if [[ $cmd == *"kubectl wait "* || $cmd == *" wait --for=create "* || $cmd == *" rollout status "* ]]; then controller_sync; fi
    readme_run "$run"
    steps=$((steps + 1))
    if ((RC != 0)); then
      fail "install: README.md's \`$(one_line "$cmd")\`: exit $RC: $(one_line "$OUT")"
      break
    fi
    if [[ -n ${SECTION_SHOWN[i]} ]] && ! diff=$(readme_output_is "${SECTION_SHOWN[i]}" "$OUT"); then
      fail "install: README.md's \`$(one_line "$cmd")\`: $diff: $(one_line "$OUT")"
      break
    fi
    case $cmd in
    "kubectl delete "*) controller_sync drop ;;
    "kubectl create namespace "*) k -n "${cmd##* }" create serviceaccount default >/dev/null ;;
    *" logs -l kubewarden/policy-server="*)
      plain_class=$(k -n install-probe get pod "$PLAIN" -o jsonpath='{.spec.runtimeClassName}' 2>&1 || true)
      if [[ $OUT == *"install-probe/$SEED: unchanged: 0/2 kata nodes can run this pod: 2 node(s) didn't match Pod's node affinity/selector"* &&
        $OUT != *"install-probe/plain"* && $plain_class == "" ]]; then
        pass "install, the dry run: no pod changed; README.md's grep of the log finds the master-pinned pod's decision and not the plain pod's: $(one_line "$OUT")"
      else
        fail "install, the dry run: the plain pod's class '$(one_line "$plain_class")'; README.md's grep: $(one_line "$OUT")"
      fi
      # policy-server's own line for each monitor-mode evaluation names the
      # pod too (the operations guide says so).
      if grep -F 'monitor mode' "$D/${PS_PROC[kata-runtime-policy]}.log" | grep -F "\"$SEED\"" | grep -qF '"install-probe"'; then
        pass "install, the dry run: policy-server's own 'policy evaluation (monitor mode)' line names the pod and its namespace"
      else
        fail "install, the dry run: no 'monitor mode' line of policy-server names install-probe/$SEED"
      fi
      # README.md's metrics: the dry run counts what it would do, in the
      # decision's code: the plain pod given Kata (200), the master-pinned
      # one without a kata node (412).
      # A probe that failed open may still be counted once its evaluation
      # ends: then its code counts twice.
      want="200:accepted=1 412:accepted=1"
      ((PROBE_RETRIED == 0)) || want="200:accepted=[12] 412:accepted=[12]"
      if until_evaluations kata-runtime-dry-run install-probe "$want"; then
        pass "install, the dry run's metrics: kubewarden_policy_evaluations_total for install-probe by error_code: $EVALUATIONS"
      else
        fail "install, the dry run's metrics for install-probe: '$EVALUATIONS', want '$want'; kube-apiserver failed open: $(one_line "$(grep -F 'failing open clusterwide-kata-runtime-dry-run' "$D/kube-apiserver.log" | cut -c1-300 | tail -3)")"
      fi
      ;;
    esac
  done
  controller_sync
  policies=$(k get clusteradmissionpolicies -o json | jq -r '[.items[] | "\(.metadata.name)@\(.spec.policyServer)@\(.spec.mode)"] | join(" ")')
  class=$(k -n kata-smoke get pod plain -o jsonpath='{.spec.runtimeClassName}' 2>/dev/null || echo missing)
  where=$(placed kata-smoke plain)
  if ((RC == 0)) && [[ $policies == "kata-runtime@kata-runtime-policy@protect" &&
    $class == kata-qemu-runtime-rs ]] && is_kata "$where"; then
    pass "install: README.md's $steps commands run as written (the suite played$played); kata-runtime protects on its own PolicyServer, and the smoke test's plain pod has kata-qemu-runtime-rs, placed on kata node $where"
  else
    fail "install: policies '$policies'; the smoke test's plain pod: class '$class', placed '$where'"
  fi
  # README.md's metrics for the smoke test: the plain pod given Kata, the
  # master-pinned one without a kata node.
  if until_evaluations kata-runtime kata-smoke "200:accepted=1 412:accepted=1"; then
    pass "install, protect mode's metrics: kubewarden_policy_evaluations_total for kata-smoke by error_code: $EVALUATIONS"
  else
    fail "install, protect mode's metrics for kata-smoke: '$EVALUATIONS', want '200:accepted=1 412:accepted=1'"
  fi
  # The guide's queries over the smoke test's pods (and the suite's
  # opted-out and runc pods, created earlier by run.sh).
  # The audit log: the guide's query of it, on this API server's log (every
  # request on pods, at level Metadata), as the guide shows its output ("…"
  # for the rest). The log is written asynchronously: up to 5 s.
  readme_cmd "jq -c " "AUDIT_LOG"
  CMD=${CMD//AUDIT_LOG/$D/audit.log}
  readme_shows "audit log query" 5
  # One pod's decision, the pod named for NAME, the guide's namespace the
  # current one.
  readme_inline "kubectl get pod NAME -o jsonpath="
  README_NS=kata-smoke readme_run "${CMD/ NAME / plain }"
  if [[ $RC == 0 && $OUT == 'mutated: runtimeClassName "kata-qemu-runtime-rs" assigned: a kata node can run this pod' ]]; then
    pass "the guide's \`$CMD\` for plain: $OUT"
  else
    fail "the guide's \`$CMD\` for plain: exit $RC: $(one_line "$OUT")"
  fi

  # Finding the pods that did not get Kata: the guide's rows (their
  # namespaces aside) among the recipe's, every row a pod without Kata.
  if ! command -v column >/dev/null; then
    echo "SKIP the guide's \"Finding the pods that did not get Kata\": column not found (Debian: bsdextrautils)"
  else
    readme_cmd "kubectl get pods -A -o json | jq " "--arg class"
    readme_run "$CMD"
    # A row: namespace, name, class or "-", the decision (which has spaces).
    row='^([^ ]+) +([^ ]+) +([^ ]+) +(.+)$'
    rows="" bad="" missing=""
    while IFS= read -r line; do
      if [[ $line =~ $row && ${BASH_REMATCH[3]} != kata-qemu-runtime-rs ]]; then
        rows+="${BASH_REMATCH[2]} | ${BASH_REMATCH[3]} | ${BASH_REMATCH[4]}"$'\n'
      else
        bad+=" [$line]"
      fi
    done < <(printf '%s' "$OUT")
    while IFS= read -r line; do
      [[ $line =~ $row ]] && grep -qxF "${BASH_REMATCH[2]} | ${BASH_REMATCH[3]} | ${BASH_REMATCH[4]}" <<<"$rows" ||
        missing+=" [$line]"
    done < <(printf '%s' "$SHOWN")
    if [[ -z $SHOWN ]]; then
      fail "the guide: \"Finding the pods that did not get Kata\": no output shown: nothing to check"
    elif [[ $RC == 0 && -z $bad && -z $missing ]]; then
      pass "the guide's \"Finding the pods that did not get Kata\": $(grep -c . <<<"$OUT") pods without Kata, the guide's $(grep -c . <<<"$SHOWN") rows among them"
    else
      fail "the guide's \"Finding the pods that did not get Kata\": exit $RC; rows not shown:${missing:- none}; rows not as the guide's: ${bad:-none}"
    fi
  fi
  # The opted-out pods, and they alone (opt-in-false carries the label
  # "false").
  readme_inline "kubectl get pods -A -l "
  readme_run "$CMD"
  got=$(columns 'NR == 1 {print $1, $2; next} {print $1 "/" $2}')
  readme_expect "$got" "NAMESPACE NAME $OPTOUT/metrics-agent $OPTOUT/opted-out " "$got"
  # README.md's alert for lost read access: without the RBAC, a pod goes
  # without Kata, and its evaluation counts under 503, which the alert's
  # increase() sees.
  k delete -f examples/rbac.yaml >/dev/null
  t=$(date +%s)
  until out=$(manifest_json tests/cluster/pods/plain.yaml | jq '.metadata.name = "no-access"' |
    k -n kata-smoke create -f - 2>&1) && [[ $(k -n kata-smoke get pod no-access -o jsonpath='{.spec.runtimeClassName}') == "" ]]; do
    k -n kata-smoke delete pod no-access --ignore-not-found --grace-period=0 --force >/dev/null 2>&1
    (($(date +%s) - t < 10)) || break
    sleep 0.5
  done
  if until_evaluations kata-runtime kata-smoke "*503:accepted=*"; then
    pass "install, read access lost: the pod has no Kata ($(one_line "$out")), and the alert's series error_code=503 counts it: $EVALUATIONS"
  else
    fail "install, read access lost: '$EVALUATIONS', want a series with error_code 503; the pod: $(one_line "$out")"
  fi
  k apply -f examples/rbac.yaml >/dev/null
  for n in $ASIDE; do k label "$n" katacontainers.io/kata-runtime=true >/dev/null; done
  k taint node worker-2 dedicated=db:NoSchedule >/dev/null
  CONTROLLER_LOG_LEVEL=warn
  PS_METRICS=""
fi
