use std::borrow::Cow;
use std::ops::ControlFlow;

use super::*;

mod serde_oracle;

/// All the nodes of a NodeList answer.
fn parse_node_list(bytes: &[u8]) -> Result<Vec<Node<'_>>, String> {
    let mut nodes = Vec::new();
    scan_node_list(bytes, KeyFilter::All, |n| {
        nodes.push(n.clone());
        ControlFlow::Continue(())
    })?;
    Ok(nodes)
}

#[test]
fn reads_only_what_it_needs_and_borrows() {
    let json = br#"{"apiVersion":"v1","kind":"NodeList","metadata":{"resourceVersion":"1"},
      "items":[{"metadata":{"name":"w1","labels":{"a":"1","esc\"aped":"x"},"annotations":{"big":"..."}},
                "spec":{"taints":[{"key":"k","effect":"NoSchedule"}],"unschedulable":true,"podCIDR":"10.0.0.0/24"},
                "status":{"images":[]}},
               {"metadata":{"name":"w2","labels":null},"spec":{"taints":null}},
               {"metadata":{"name":"w3"}}]}"#;
    let nodes = parse_node_list(json).unwrap();
    assert_eq!(nodes.len(), 3);
    assert_eq!(nodes[0].name(), "w1");
    assert_eq!(nodes[0].metadata.labels.get("a"), Some("1"));
    assert_eq!(nodes[0].metadata.labels.get("esc\"aped"), Some("x"));
    assert!(matches!(nodes[0].metadata.name.0, Cow::Borrowed(_)));
    assert!(matches!(
        nodes[0].metadata.labels.0[0].1.0,
        Cow::Borrowed(_)
    ));
    assert!(matches!(nodes[0].metadata.labels.0[1].0.0, Cow::Owned(_)));
    assert_eq!(nodes[0].spec.taints[0].key.as_str(), "k");
    assert_eq!(nodes[0].spec.taints[0].value(), "");
    assert!(nodes[0].spec.unschedulable);
    assert_eq!(nodes[1].metadata.labels.get("a"), None);
    assert_eq!(nodes[2].metadata.labels.get("a"), None);
    assert!(nodes[1].spec.taints.is_empty());
    assert!(!nodes[2].spec.unschedulable);
}

#[test]
fn a_filtered_scan_keeps_only_the_named_labels() {
    let json =
        br#"{"items":[{"metadata":{"name":"n","labels":{"a":"1","b":"2","c":{"odd":true}}}}]}"#;
    let wanted = vec!["b".to_string(), "missing".to_string()];
    let mut seen = Vec::new();
    scan_node_list(json, KeyFilter::Only(&wanted), |n| {
        seen.push(n.metadata.labels.clone());
        ControlFlow::Continue(())
    })
    .unwrap();
    assert_eq!(seen[0].get("b"), Some("2"));
    assert_eq!(seen[0].get("a"), None, "not kept");
    // A non-string value is an error only where a label is read.
    assert!(parse_node_list(json).is_err());
}

#[test]
fn reads_a_single_node() {
    let json = br#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"w1","labels":{"a":"1"}},
        "spec":{"unschedulable":true},"status":{"allocatable":{"cpu":"4"}}}"#;
    let node = parse_node(json, KeyFilter::All).unwrap();
    assert_eq!(node.name(), "w1");
    assert_eq!(node.metadata.labels.get("a"), Some("1"));
    assert!(node.spec.unschedulable && node.allocatable.listed());
    for bad in [
        &br#"{"kind":"Pod","metadata":{"name":"p"}}"#[..],
        br#"{"kind":"Node"}"#,
        br#"{"metadata":{"name":"w1"}} x"#,
        b"[]",
    ] {
        let err = parse_node(bad, KeyFilter::All).unwrap_err();
        assert!(err.contains("not a valid Node"), "{err}");
    }
}

#[test]
fn allocatable_entries_are_read_on_demand() {
    let json = br#"{"metadata":{"name":"w"},"status":{"allocatable":{"cpu":"4","memory":"8Gi","odd":{"x":[1]},"pod\u0073":"110"}}}"#;
    let node = parse_node(json, KeyFilter::All).unwrap();
    let mut seen = Vec::new();
    node.allocatable
        .for_each(
            |name| name != b"odd",
            |name, text| {
                seen.push((String::from_utf8_lossy(name).into_owned(), text.to_owned()));
                Ok(())
            },
        )
        .unwrap();
    let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    };
    assert_eq!(
        seen,
        pairs(&[("cpu", "4"), ("memory", "8Gi"), ("pods", "110")]),
        "escaped names are decoded; unwanted values are skipped unread"
    );
    let refused = node.allocatable.for_each(|_| true, |_, _| Ok(()));
    assert!(refused.is_err(), "a wanted value must be a string");
    let stopped = node
        .allocatable
        .for_each(|_| true, |_, _| Err("caller says no".into()));
    assert_eq!(stopped, Err("caller says no".into()));
}

#[test]
fn empty_and_null_items_are_an_empty_list() {
    assert!(parse_node_list(br#"{"items":[]}"#).unwrap().is_empty());
    assert!(parse_node_list(br#"{"items":null}"#).unwrap().is_empty());
    assert!(
        parse_node_list(br#"{"kind":"NodeList"}"#)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn refuses_what_is_not_a_node_list() {
    for bad in [
        &b"not json"[..],
        b"{\"items\":[{\"metadata\":{}}]}",
        b"[]",
        b"{\"items\":{}}",
        b"{\"kind\":\"PodList\",\"items\":[]}",
        b"{\"items\":[{\"metadata\":{\"name\":\"a\"}}",
        b"{\"items\":[{\"metadata\":{\"name\":\"a\"},\"status\":{\"allocatable\":[]}}]}",
    ] {
        let err = parse_node_list(bad).unwrap_err();
        assert!(err.contains("not a valid NodeList"), "{err}");
    }
}

/// Whatever the nesting of a skipped value, the reader answers with an
/// error instead of exhausting the stack.
#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    for depth in [300, 100_000] {
        let deep = format!(
            r#"{{"items":[{{"metadata":{{"name":"a","annotations":{{"x":{}{}}}}}}}]}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        );
        let err = parse_node_list(deep.as_bytes()).unwrap_err();
        assert!(err.contains("recursion limit"), "{err}");
    }
}

/// The shipped reader and the serde oracle agree on every input: same nodes
/// seen, same ending, or both refuse it.
#[test]
fn the_reader_agrees_with_serde() {
    let base = r#"{"apiVersion":"v1","kind":"NodeList","metadata":{"resourceVersion":"9"},"items":[
        {"apiVersion":"v1","kind":"Node","metadata":{"name":"a","uid":"u-1","labels":{"zone":"z1","k8s.io/x":"","esc\u0041":"v\"w"},
          "annotations":{"note":"x, y: [z]","n":"1.5e3"}},
         "spec":{"taints":[{"key":"t","value":"1","effect":"NoSchedule","timeAdded":"2026-01-01T00:00:00Z"},{"key":"u","effect":"NoExecute","value":null}],
                 "unschedulable":false,"podCIDRs":["10.0.0.0/24"]},"status":{"images":[{"names":["i"],"sizeBytes":12345678901234567890}],"x":[true,false,null,-0.5e-3],
          "allocatable":{"cpu":"15900m","memory":"64Gi","nvidia.com/gpu":"4","pods":"110","hugepages-2Mi":"0"},
          "runtimeHandlers":[{"name":"","features":{"userNamespaces":true}},7,{"name":null},
            {"name":"kata-qemu","features":{"recursiveReadOnlyMounts":true,"userNamespaces":"yes"}},{"name":"kat\u0061"}],
          "features":{"supplementalGroupsPolicy":false,"x":{"y":[1]},"supplementalGroupsPolicy":true}}},
        {"status":{"allocatable":{"cpu":"1"},"runtimeHandlers":"runc","features":[true]},"metadata":{"name":"b","labels":null},"spec":null},
        {"metadata":{"name":"c"},"spec":{"taints":null,"unschedulable":true},"status":{"allocatable":null,"runtimeHandlers":[],"features":{"supplementalGroupsPolicy":"true"}}}]}"#;
    let filters: [Option<Vec<String>>; 3] = [
        None,
        Some(vec!["zone".into(), "cpu".into()]),
        Some(vec![
            "zone".into(),
            "escA".into(),
            "k8s.io/x".into(),
            "nvidia.com/gpu".into(),
            "pods".into(),
        ]),
    ];
    let mut inputs: Vec<Vec<u8>> = vec![base.as_bytes().to_vec()];
    // Deterministic damage: every single-byte deletion, and substitutions
    // with JSON punctuation, at every position of the base document.
    for at in 0..base.len() {
        let mut cut = base.as_bytes().to_vec();
        cut.remove(at);
        inputs.push(cut);
        for b in [b'"', b',', b'}', b']', b'\\', b'0', b'n', b' '] {
            let mut changed = base.as_bytes().to_vec();
            changed[at] = b;
            inputs.push(changed);
        }
    }
    let (complete, _) = serde_oracle::with_reader(base.as_bytes(), None, usize::MAX);
    assert_eq!(complete, Ok(Scan::Completed), "the base document is valid");
    let (_, nodes) = serde_oracle::with_reader(base.as_bytes(), None, usize::MAX);
    let listed = |userns, rro| {
        Some(HandlerReport::Listed(
            HandlerFeatures::default()
                .with(HandlerFeature::UserNamespaces, userns)
                .with(HandlerFeature::RecursiveReadOnlyMounts, rro),
        ))
    };
    // kata, kata-qemu, runc, "": an escaped name, a feature that is not a
    // boolean, a handler not listed, junk entries skipped.
    assert_eq!(
        nodes[0].handlers,
        [
            listed(false, false),
            listed(false, true),
            Some(HandlerReport::NotListed),
            listed(true, false)
        ]
    );
    assert_eq!(
        nodes[1].handlers,
        [Some(HandlerReport::Nothing); 4],
        "not a list"
    );
    assert_eq!(
        nodes[2].handlers,
        [Some(HandlerReport::Nothing); 4],
        "empty"
    );
    // status.features: the last repeated key wins; not an object, or a
    // value that is not `true`, supports nothing.
    let strict: Vec<bool> = nodes.iter().map(|n| n.supplemental_groups_policy).collect();
    assert_eq!(strict, [true, false, false]);
    for text in &inputs {
        for filter in &filters {
            for stop_after in [usize::MAX, 1, 2] {
                let keep = filter.as_deref();
                assert_eq!(
                    serde_oracle::with_reader(text, keep, stop_after),
                    serde_oracle::with_serde(text, keep, stop_after),
                    "{}",
                    String::from_utf8_lossy(text)
                );
            }
        }
    }
}

#[test]
fn a_single_node_may_name_its_kind_or_not() {
    for ok in [
        &br#"{"kind":null,"metadata":{"name":"w"}}"#[..],
        br#"{"metadata":{"name":"w"},"kind":"Node"}"#,
        br#"{"apiVersion":"v1","metadata":{"name":"w"}}"#,
    ] {
        assert_eq!(parse_node(ok, KeyFilter::All).unwrap().name(), "w");
    }
    let err = parse_node(br#"{"metadata":{"name":"w"},"kind":5}"#, KeyFilter::All).unwrap_err();
    assert!(err.contains("not a valid Node"), "{err}");
}
