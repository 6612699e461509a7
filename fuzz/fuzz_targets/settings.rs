//! Settings parsing and the `validate_settings` answer.
#![no_main]

use kata_runtime_policy::settings::Settings;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let parsed = Settings::from_json(data);
    if let Ok(settings) = &parsed {
        if let Err(e) = settings.validate() {
            panic!("from_json accepted settings that validate() refuses: {settings:?}: {e}");
        }
        // Socket paths are stored absolute and clean: the compatibility
        // check compares them element by element with cleaned hostPaths.
        for path in &settings.host_socket_paths {
            assert!(
                path.starts_with('/') && kata_runtime_policy::incompatible::clean(path) == *path,
                "accepted hostSocketPaths entry {path:?} is not absolute and clean"
            );
        }
        assert!(settings.device_resources().is_ok());
        // What the decision sends to the host must still be a selector we accept.
        if let Some(selector) = settings.host_label_selector() {
            assert!(
                kata_runtime_policy::labels::parse_selector(selector).is_ok(),
                "accepted kataNodeSelector {selector:?} fails to parse once trimmed"
            );
        }
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
