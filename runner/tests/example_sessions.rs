//! What the README's "Try it first" replays stays what `make
//! example-sessions` makes: test_data/settings-examples.yml is the settings
//! of examples/cluster-admission-policy.yaml, and test_data/sessions/examples/
//! holds exactly the sessions the Makefile names, each byte for byte what
//! scripts/sessions-for-account.sh writes for the example's
//! policyServerServiceAccount. And with those settings, every such session
//! answers every question the policy asks.

mod common;

use std::collections::BTreeSet;
use std::process::Command;

use common::{policy, request, root};
use kwrun::Session;
use serde_json::Value;

const EXAMPLE: &str = "examples/cluster-admission-policy.yaml";
const SETTINGS: &str = "test_data/settings-examples.yml";
const EXAMPLES_DIR: &str = "test_data/sessions/examples";

fn yaml(path: &str) -> Value {
    let text = std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The settings of the example's ClusterAdmissionPolicy.
fn example_settings() -> Value {
    let text = std::fs::read_to_string(root().join(EXAMPLE)).unwrap();
    serde_yaml::Deserializer::from_str(&text)
        .map(|doc| serde::Deserialize::deserialize(doc).unwrap())
        .find(|d: &Value| d["kind"] == "ClusterAdmissionPolicy")
        .unwrap_or_else(|| panic!("{EXAMPLE} has no ClusterAdmissionPolicy"))["spec"]["settings"]
        .clone()
}

fn account() -> String {
    example_settings()["policyServerServiceAccount"]
        .as_str()
        .unwrap_or_else(|| panic!("{EXAMPLE} sets no policyServerServiceAccount"))
        .to_string()
}

/// The Makefile's `EXAMPLE_SESSIONS`: paths under test_data/sessions/
/// (recorded with the example's class), each copied under its file name.
fn listed_sources() -> BTreeSet<String> {
    let makefile = std::fs::read_to_string(root().join("Makefile")).unwrap();
    let line = makefile
        .lines()
        .find_map(|l| l.strip_prefix("EXAMPLE_SESSIONS :="))
        .expect("the Makefile sets EXAMPLE_SESSIONS");
    line.split_whitespace().map(str::to_string).collect()
}

/// The file names of the copies.
fn listed_sessions() -> BTreeSet<String> {
    listed_sources()
        .iter()
        .map(|p| p.rsplit('/').next().unwrap_or(p).to_string())
        .collect()
}

fn committed_sessions() -> BTreeSet<String> {
    std::fs::read_dir(root().join(EXAMPLES_DIR))
        .unwrap_or_else(|e| panic!("{EXAMPLES_DIR}: {e}"))
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect()
}

#[test]
fn the_settings_file_is_the_examples() {
    assert_eq!(
        yaml(SETTINGS),
        example_settings(),
        "{SETTINGS} is not the settings of {EXAMPLE}: run make example-sessions"
    );
}

#[test]
fn the_example_sessions_are_what_the_script_writes() {
    let listed = listed_sessions();
    assert!(listed.contains("kata-workers.yml"), "{listed:?}");
    assert_eq!(
        committed_sessions(),
        listed,
        "{EXAMPLES_DIR} holds other files than the Makefile's EXAMPLE_SESSIONS: run make example-sessions"
    );
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("example-sessions");
    let _ = std::fs::remove_dir_all(&out);
    let output = Command::new("bash")
        .current_dir(root())
        .arg("scripts/sessions-for-account.sh")
        .arg(account())
        .arg(&out)
        .args(
            listed_sources()
                .iter()
                .map(|name| format!("test_data/sessions/{name}")),
        )
        .output()
        .expect("run scripts/sessions-for-account.sh");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for name in &listed {
        let generated = std::fs::read_to_string(out.join(name)).unwrap();
        let committed = std::fs::read_to_string(root().join(EXAMPLES_DIR).join(name)).unwrap();
        assert!(
            generated == committed,
            "{EXAMPLES_DIR}/{name} is not what scripts/sessions-for-account.sh writes: run make example-sessions"
        );
        // The copy asks for the example's account, never the recorded one.
        assert!(
            committed.contains(&format!("user: {}", account())),
            "{name}"
        );
        assert!(
            !committed.contains("user: system:serviceaccount:kubewarden:policy-server"),
            "{name}"
        );
    }
}

/// The example's settings, replayed against each example session for the
/// plain pod and the master-pinned one, never meet a replay error, and leave
/// no recorded question unasked that they had to ask.
#[test]
fn the_example_settings_replay_the_example_sessions() {
    let p = policy();
    let settings = example_settings();
    for name in listed_sessions() {
        for pod in ["pod-plain.json", "pod-master-pinned.json"] {
            let path = root().join(EXAMPLES_DIR).join(&name);
            let session = Session::load(&path).unwrap_or_else(|e| panic!("{name}: {e:#}"));
            let r = p.evaluate(&request(pod), &settings, session);
            let reason = r
                .audit_annotations
                .as_ref()
                .and_then(|a| a.get("reason"))
                .unwrap_or_else(|| panic!("{name} {pod}: no reason: {r:?}"));
            assert!(
                !reason.contains("recorded session") && !reason.contains("cannot "),
                "{name} {pod}: {reason}"
            );
            assert_eq!(common::required_left(&p.take_session()), 0, "{name} {pod}");
        }
    }
}
