//! The command line: flags only, each with a default but the ConfigMap's.

use kata_runtime_policy::shapes::DEFAULT_PER_NODE_LABELS;

pub const USAGE: &str = "\
usage: kata-node-shapes --namespace NS --name NAME [options]

Watches the kata nodes and writes their shapes into the ConfigMap NS/NAME,
the one kata-runtime-policy's nodeShapes setting names.

  --selector SEL         the kata nodes: kata-runtime-policy's kataNodeSelector
                         (default katacontainers.io/kata-runtime=true)
  --per-node-label KEY   a label whose value differs from node to node in a
                         pool; repeat for more; KEY* is a prefix (default
                         kubernetes.io/hostname, topology.k8s.aws/network-node-layer-*)
  --relist-seconds N     list the nodes again every N seconds (default 60)
  --valid-seconds N      the policy uses a view until N seconds after its list
                         (default 180)
  --max-bytes N          a bigger view, as stored in the ConfigMap, holds no
                         shapes (default 900000)
";

#[derive(Debug, Clone, PartialEq)]
pub struct Args {
    pub namespace: String,
    pub name: String,
    pub selector: String,
    pub per_node_labels: Vec<String>,
    pub relist_seconds: u64,
    pub valid_seconds: i64,
    pub max_bytes: usize,
}

impl Args {
    pub fn parse(mut argv: impl Iterator<Item = String>) -> Result<Args, String> {
        let mut args = Args {
            namespace: String::new(),
            name: String::new(),
            selector: "katacontainers.io/kata-runtime=true".into(),
            per_node_labels: Vec::new(),
            relist_seconds: 60,
            valid_seconds: 180,
            max_bytes: 900_000,
        };
        while let Some(flag) = argv.next() {
            let mut value = || argv.next().ok_or_else(|| format!("{flag} needs a value"));
            let number = |v: String| v.parse::<u64>().ok().filter(|n| *n > 0);
            match flag.as_str() {
                "--namespace" => args.namespace = value()?,
                "--name" => args.name = value()?,
                "--selector" => args.selector = value()?,
                "--per-node-label" => args.per_node_labels.push(value()?),
                "--relist-seconds" => {
                    args.relist_seconds =
                        number(value()?).ok_or("--relist-seconds takes a positive number")?
                }
                "--valid-seconds" => {
                    let n = number(value()?).ok_or("--valid-seconds takes a positive number")?;
                    args.valid_seconds =
                        i64::try_from(n).map_err(|_| "--valid-seconds is too big")?;
                }
                "--max-bytes" => {
                    let n = number(value()?).ok_or("--max-bytes takes a positive number")?;
                    args.max_bytes = usize::try_from(n).map_err(|_| "--max-bytes is too big")?;
                }
                other => return Err(format!("unknown flag {other:?}")),
            }
        }
        if args.namespace.is_empty() || args.name.is_empty() {
            return Err("--namespace and --name are required".into());
        }
        if args.per_node_labels.is_empty() {
            args.per_node_labels = DEFAULT_PER_NODE_LABELS.map(String::from).to_vec();
        }
        // A view must outlive the next list, or the policy falls back to
        // the node list between two lists.
        if args.valid_seconds <= args.relist_seconds as i64 {
            return Err("--valid-seconds must be more than --relist-seconds".into());
        }
        Ok(args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Args, String> {
        Args::parse(line.split_whitespace().map(String::from))
    }

    #[test]
    fn defaults_and_flags() {
        let a = parse("--namespace kata --name shapes").unwrap();
        assert_eq!(a.selector, "katacontainers.io/kata-runtime=true");
        assert_eq!(a.per_node_labels.len(), 2);
        assert_eq!((a.relist_seconds, a.valid_seconds), (60, 180));
        let a = parse("--namespace k --name s --per-node-label x --per-node-label y* --relist-seconds 5 --valid-seconds 20").unwrap();
        assert_eq!(a.per_node_labels, ["x", "y*"]);
        assert_eq!((a.relist_seconds, a.valid_seconds), (5, 20));
    }

    #[test]
    fn mistakes_are_refused_with_what_to_do() {
        assert_eq!(
            parse("--name s").unwrap_err(),
            "--namespace and --name are required"
        );
        assert_eq!(
            parse("--namespace k --name s --bogus").unwrap_err(),
            "unknown flag \"--bogus\""
        );
        assert_eq!(
            parse("--namespace k --name").unwrap_err(),
            "--name needs a value"
        );
        assert!(parse("--namespace k --name s --relist-seconds 0").is_err());
        assert_eq!(
            parse("--namespace k --name s --relist-seconds 60 --valid-seconds 60").unwrap_err(),
            "--valid-seconds must be more than --relist-seconds"
        );
    }
}
