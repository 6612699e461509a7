//! `kwrun run`: a `kwctl run` look-alike for local policy files.
//!
//! Same flags, same output line, same exit codes as kwctl for what this
//! project uses, but native, offline, and fed by recorded sessions only.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Result, anyhow};
use serde_json::Value;

use kwrun::{Policy, Session, load_request, load_settings, parse_settings_json};

const USAGE: &str = "\
Usage: kwrun run [OPTIONS] --request-path <FILE> <POLICY.wasm>

Evaluates a Kubewarden waPC policy like `kwctl run` and prints the
AdmissionResponse as one JSON line.

Options:
  -r, --request-path <FILE>      AdmissionReview or AdmissionRequest (JSON)
  -s, --settings-path <FILE>     policy settings (YAML or JSON)
      --settings-json <JSON>     policy settings, inline
      --replay-host-capabilities-interactions <FILE>
                                 kwctl session answering the policy's host calls
  -a, --allow-context-aware      accepted for kwctl compatibility; not enforced
  -h, --help                     print this help

Exit status: 0 evaluated, 1 error or invalid settings, 2 usage error.";

/// Where the settings come from; `{}` when neither flag is given.
#[derive(Debug, PartialEq)]
enum SettingsSource {
    Default,
    Path(PathBuf),
    Json(String),
}

#[derive(Debug, PartialEq)]
struct RunArgs {
    request_path: PathBuf,
    settings: SettingsSource,
    replay: Option<PathBuf>,
    policy: PathBuf,
}

#[derive(Debug, PartialEq)]
enum Command {
    Help,
    Run(RunArgs),
}

/// Parses the command line (without the program name). `Err` is a usage
/// error message.
fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Command, String> {
    let mut args = args.into_iter();
    match args.next().as_deref() {
        Some("run") => {}
        Some("-h" | "--help") | None => return Ok(Command::Help),
        Some(other) => return Err(format!("unknown command {other:?}")),
    }

    let mut request_path = None;
    let mut settings_path = None;
    let mut settings_json = None;
    let mut replay = None;
    let mut positional = Vec::new();
    let mut only_positional = false;

    while let Some(arg) = args.next() {
        if only_positional || !arg.starts_with('-') || arg == "-" {
            positional.push(arg);
            continue;
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                (flag.to_owned(), Some(value.to_owned()))
            }
            _ => (arg.clone(), None),
        };
        let mut value = |slot: &mut Option<String>| -> Result<(), String> {
            let v = match inline.clone() {
                Some(v) => v,
                None => args.next().ok_or_else(|| format!("{flag} needs a value"))?,
            };
            if slot.replace(v).is_some() {
                return Err(format!("{flag} given more than once"));
            }
            Ok(())
        };
        match flag.as_str() {
            "--" => only_positional = true,
            "-h" | "--help" => return Ok(Command::Help),
            "-r" | "--request-path" => value(&mut request_path)?,
            "-s" | "--settings-path" => value(&mut settings_path)?,
            "--settings-json" => value(&mut settings_json)?,
            "--replay-host-capabilities-interactions" => value(&mut replay)?,
            // This host does not enforce the policy's contextAwareResources
            // grants: the replayed session already limits what the policy can
            // see, so the flag is accepted (for kwctl command-line parity) and
            // ignored.
            "-a" | "--allow-context-aware" => {
                if inline.is_some() {
                    return Err(format!("{flag} takes no value"));
                }
            }
            _ => return Err(format!("unknown option {flag}")),
        }
    }

    let request_path = request_path.ok_or("--request-path is required")?;
    let settings = match (settings_path, settings_json) {
        (Some(_), Some(_)) => {
            return Err("--settings-path and --settings-json are mutually exclusive".into());
        }
        (Some(path), None) => SettingsSource::Path(path.into()),
        (None, Some(json)) => SettingsSource::Json(json),
        (None, None) => SettingsSource::Default,
    };
    let policy = match positional.as_slice() {
        [policy] => policy.strip_prefix("file://").unwrap_or(policy).into(),
        [] => return Err("missing the policy .wasm file".into()),
        _ => return Err(format!("expected one policy file, got {positional:?}")),
    };
    Ok(Command::Run(RunArgs {
        request_path: request_path.into(),
        settings,
        replay: replay.map(PathBuf::from),
        policy,
    }))
}

/// Evaluates like `kwctl run`: settings are validated first (an invalid
/// configuration is an error and prints nothing on stdout), then the request.
fn run(args: &RunArgs) -> Result<()> {
    let request = load_request(&args.request_path)?;
    let settings = match &args.settings {
        SettingsSource::Default => Value::Object(Default::default()),
        SettingsSource::Path(path) => load_settings(path)?,
        SettingsSource::Json(json) => parse_settings_json(json)?,
    };
    let session = match &args.replay {
        Some(path) => Session::load(path)?,
        None => Session::none(),
    };
    let policy = Policy::load(&args.policy)?;

    let validation = policy.validate_settings(settings.to_string().as_bytes())?;
    if validation.get("valid") != Some(&Value::Bool(true)) {
        return Err(match validation.get("message").and_then(Value::as_str) {
            Some(message) => anyhow!("Provided settings are not valid: {message}"),
            None => anyhow!("Provided settings are not valid"),
        });
    }

    println!("{}", policy.evaluate(&request, &settings, session));
    Ok(())
}

fn main() -> ExitCode {
    match parse_args(std::env::args().skip(1)) {
        Err(message) => {
            eprintln!("error: {message}\n\n{USAGE}");
            ExitCode::from(2)
        }
        Ok(Command::Help) => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        Ok(Command::Run(args)) => match run(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("Error: {err:#}");
                ExitCode::FAILURE
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Command, String> {
        parse_args(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn flags_in_any_order_and_equals_form() {
        let expected = Command::Run(RunArgs {
            request_path: "req.json".into(),
            settings: SettingsSource::Json("{\"a\":1}".into()),
            replay: Some("s.yml".into()),
            policy: "p.wasm".into(),
        });
        let a = parse(&[
            "run",
            "--request-path",
            "req.json",
            "--settings-json",
            "{\"a\":1}",
            "--replay-host-capabilities-interactions",
            "s.yml",
            "--allow-context-aware",
            "p.wasm",
        ]);
        let b = parse(&[
            "run",
            "p.wasm",
            "--allow-context-aware",
            "--replay-host-capabilities-interactions=s.yml",
            "--settings-json={\"a\":1}",
            "-r",
            "req.json",
        ]);
        assert_eq!(a, Ok(expected));
        assert_eq!(a, b);
    }

    #[test]
    fn settings_default_and_file_policy_uri() {
        let Ok(Command::Run(args)) = parse(&["run", "-r", "req.json", "file:///tmp/p.wasm"]) else {
            panic!("should parse");
        };
        assert_eq!(args.settings, SettingsSource::Default);
        assert_eq!(args.policy, PathBuf::from("/tmp/p.wasm"));
        assert_eq!(args.replay, None);
    }

    #[test]
    fn help() {
        assert_eq!(parse(&["--help"]), Ok(Command::Help));
        assert_eq!(parse(&["run", "--help"]), Ok(Command::Help));
        assert_eq!(parse(&[]), Ok(Command::Help));
    }

    #[test]
    fn usage_errors() {
        assert!(
            parse(&["run", "-r", "x", "--bogus", "p.wasm"])
                .unwrap_err()
                .contains("--bogus")
        );
        assert!(parse(&["eval"]).is_err());
        assert!(
            parse(&["run", "p.wasm"])
                .unwrap_err()
                .contains("--request-path")
        );
        assert!(parse(&["run", "-r", "x"]).unwrap_err().contains("policy"));
        assert!(parse(&["run", "-r", "x", "a.wasm", "b.wasm"]).is_err());
        assert!(parse(&["run", "-r"]).unwrap_err().contains("needs a value"));
        assert!(parse(&["run", "-r", "x", "-r", "y", "p.wasm"]).is_err());
        assert!(
            parse(&[
                "run",
                "-r",
                "x",
                "--settings-path",
                "s",
                "--settings-json",
                "{}",
                "p.wasm"
            ])
            .unwrap_err()
            .contains("mutually exclusive")
        );
    }
}
