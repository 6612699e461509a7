//! Settings parsing and the `validate_settings` answer.
#![no_main]

use kata_runtime_policy::labels;
use kata_runtime_policy::settings::{ServiceAccount, Settings};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let parsed = Settings::from_json(data);
    if let Ok(settings) = &parsed {
        // Socket paths are stored absolute and clean: the compatibility
        // check compares them element by element with cleaned hostPaths.
        for path in &settings.host_socket_paths {
            assert!(
                path.starts_with('/') && kata_runtime_policy::incompatible::clean(path) == *path,
                "accepted hostSocketPaths entry {path:?} is not absolute and clean"
            );
        }
        // The typed values say what the text they were read from says.
        let input: Value = serde_json::from_slice(data).unwrap_or(Value::Null);
        for (key, names) in [
            ("ignoredResources", &settings.ignored_resources),
            ("hostDeviceResources", &settings.host_device_resources),
        ] {
            let entries = input
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten();
            for entry in entries.filter_map(Value::as_str) {
                let covered = match entry.strip_suffix("/*") {
                    Some(group) => format!("{group}/x"),
                    None => entry.to_string(),
                };
                assert!(
                    names.contains(&covered),
                    "{key}: {entry:?} is not in {names:?}"
                );
            }
        }
        // What the decision sends to the host, and what it matches named
        // nodes with, are the same selector.
        let selector = &settings.kata_node_selector;
        for text in [Some(selector.text()), selector.host_selector()]
            .into_iter()
            .flatten()
        {
            assert_eq!(
                labels::parse_selector(text).as_deref(),
                Ok(selector.requirements()),
                "accepted kataNodeSelector {text:?} parses differently"
            );
        }
        let account = &settings.policy_server_service_account;
        assert_eq!(
            ServiceAccount::parse(account.user()).as_ref(),
            Some(account)
        );
    }

    let response = kata_runtime_policy::settings_response(data);
    let v: Value = serde_json::from_slice(&response).unwrap_or_else(|e| {
        panic!(
            "settings_response is not JSON ({e}): {}",
            String::from_utf8_lossy(&response)
        )
    });
    let valid = v.get("valid").and_then(Value::as_bool);
    assert_eq!(
        valid,
        Some(parsed.is_ok()),
        "`valid` disagrees with Settings::from_json: {v}"
    );
});
