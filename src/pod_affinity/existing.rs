//! The pods already in the cluster, as the host's pod list holds them:
//! read one at a time with [`json_scan`](crate::json_scan), keeping only
//! what inter-pod affinity reads (namespace, labels, node, and the required
//! anti-affinity terms, left raw until a pod has some).

use crate::json::{Str, starts_as_object};
use crate::json_scan::Cursor;

/// One existing pod, borrowed from the list where the JSON allows.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ExistingPod<'a> {
    pub namespace: Str<'a>,
    /// Every label, in document order.
    pub labels: Vec<(Str<'a>, Str<'a>)>,
    /// `spec.nodeName`: empty while the pod waits for the scheduler.
    pub node_name: Str<'a>,
    /// `spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution`,
    /// as JSON, when set and not null.
    pub anti_affinity: Option<&'a [u8]>,
}

impl ExistingPod<'_> {
    pub fn label(&self, key: &str) -> Option<&str> {
        (self.labels.iter())
            .find(|(k, _)| k.as_str() == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Why a pod list from the host cannot be read.
pub fn not_a_pod_list(why: &str) -> String {
    format!("the pod list from the cluster is not a valid PodList: {why}")
}

/// Reads the host's `list_resources_all` answer (a `v1` PodList), calling
/// `visit` on each pod; one pod is kept at a time. `visit`'s error ends the
/// scan and is returned as it is.
pub fn scan_pod_list<'de>(
    bytes: &'de [u8],
    mut visit: impl FnMut(&ExistingPod<'de>) -> Result<(), String>,
) -> Result<(), ScanError> {
    let invalid = |why: String| ScanError::Invalid(not_a_pod_list(&why));
    if !starts_as_object(bytes) {
        return Err(invalid("not a JSON object".into()));
    }
    let mut c = Cursor::new(bytes);
    let mut stopped = None;
    let read = c.object(|c, key| {
        match key.as_bytes() {
            b"kind" if !c.eat_null()? => {
                let kind = c.string()?;
                if kind != "PodList" {
                    return Err(format!("kind is {kind:?}"));
                }
            }
            b"items" if !c.eat_null()? => {
                let mut pod = ExistingPod::default();
                c.array(|c| {
                    read_pod(c, &mut pod)?;
                    match visit(&pod) {
                        Ok(()) => Ok(true),
                        Err(why) => {
                            stopped = Some(why);
                            Ok(false)
                        }
                    }
                })?;
                if stopped.is_some() {
                    return Err(String::new());
                }
            }
            b"kind" | b"items" => {}
            _ => c.skip_value()?,
        }
        Ok(())
    });
    if let Some(why) = stopped {
        return Err(ScanError::Stopped(why));
    }
    read.map_err(invalid)?;
    if !c.at_end() {
        return c.error("trailing characters").map_err(invalid);
    }
    Ok(())
}

/// How a pod list scan failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScanError {
    /// The answer is no PodList.
    Invalid(String),
    /// The visitor stopped the scan, saying why.
    Stopped(String),
}

fn read_pod<'de>(c: &mut Cursor<'de>, pod: &mut ExistingPod<'de>) -> Result<(), String> {
    pod.namespace = Str::default();
    pod.labels.clear();
    pod.node_name = Str::default();
    pod.anti_affinity = None;
    c.object(|c, key| {
        match key.as_bytes() {
            b"metadata" if !c.eat_null()? => c.object(|c, key| {
                match key.as_bytes() {
                    b"namespace" if !c.eat_null()? => pod.namespace = Str(c.string()?),
                    b"labels" if !c.eat_null()? => {
                        pod.labels.clear();
                        c.object(|c, key| {
                            pod.labels.push((Str(key.into_text()?), Str(c.string()?)));
                            Ok(())
                        })?;
                    }
                    // null, consumed by the guard
                    b"namespace" | b"labels" => {}
                    _ => c.skip_value()?,
                }
                Ok(())
            })?,
            b"spec" if !c.eat_null()? => c.object(|c, key| {
                match key.as_bytes() {
                    b"nodeName" if !c.eat_null()? => pod.node_name = Str(c.string()?),
                    b"affinity" if !c.eat_null()? => c.object(|c, key| {
                        match key.as_bytes() {
                            b"podAntiAffinity" if !c.eat_null()? => c.object(|c, key| {
                                match key.as_bytes() {
                                    b"requiredDuringSchedulingIgnoredDuringExecution"
                                        if !c.eat_null()? =>
                                    {
                                        pod.anti_affinity = Some(c.raw_value()?);
                                    }
                                    b"requiredDuringSchedulingIgnoredDuringExecution" => {}
                                    _ => c.skip_value()?,
                                }
                                Ok(())
                            })?,
                            b"podAntiAffinity" => {}
                            _ => c.skip_value()?,
                        }
                        Ok(())
                    })?,
                    b"nodeName" | b"affinity" => {}
                    _ => c.skip_value()?,
                }
                Ok(())
            })?,
            b"metadata" | b"spec" => {}
            _ => c.skip_value()?,
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pod as the tests compare it: namespace, labels, node, whether it
    /// has anti-affinity.
    type Seen = (String, Vec<(String, String)>, String, bool);

    fn scan(json: &str) -> Result<Vec<Seen>, ScanError> {
        let mut out = Vec::new();
        scan_pod_list(json.as_bytes(), |p| {
            out.push((
                p.namespace.as_str().to_string(),
                (p.labels.iter())
                    .map(|(k, v)| (k.as_str().to_string(), v.as_str().to_string()))
                    .collect(),
                p.node_name.as_str().to_string(),
                p.anti_affinity.is_some(),
            ));
            Ok(())
        })?;
        Ok(out)
    }

    #[test]
    fn reads_what_affinity_needs_and_skips_the_rest() {
        let pods = scan(
            r#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[
                {"metadata":{"name":"a","namespace":"ns1","labels":{"app":"db","x":"1"},
                             "annotations":{"big":"{\"nested\":[1,2]}"}},
                 "spec":{"nodeName":"n1","containers":[{"name":"c"}],
                         "affinity":{"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
                            [{"topologyKey":"zone","labelSelector":{}}]}}}},
                {"metadata":{"name":"b","namespace":"ns2","labels":null},"spec":{"nodeName":null}},
                {"metadata":{"name":"c","namespace":"ns2","labels":{"app":"web"}},"spec":{"affinity":null}}
            ]}"#,
        )
        .unwrap();
        assert_eq!(pods.len(), 3);
        assert_eq!(pods[0].0, "ns1");
        assert_eq!(pods[0].1.len(), 2);
        assert_eq!((pods[0].2.as_str(), pods[0].3), ("n1", true));
        assert_eq!(
            (pods[1].1.len(), pods[1].2.as_str(), pods[1].3),
            (0, "", false)
        );
        assert_eq!(pods[2].1, vec![("app".to_string(), "web".to_string())]);
    }

    #[test]
    fn a_labels_lookup_finds_the_value() {
        let mut seen = Vec::new();
        scan_pod_list(
            br#"{"items":[{"metadata":{"labels":{"a":"1","b":"2"}}}]}"#,
            |p| {
                seen.push((p.label("b").map(str::to_string), p.label("c").is_none()));
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(seen, vec![(Some("2".to_string()), true)]);
    }

    #[test]
    fn malformed_lists_are_errors() {
        for bad in [
            "[]",
            r#"{"kind":"NodeList","items":[]}"#,
            r#"{"items":[{"metadata":{"labels":{"a":1}}}]}"#,
            r#"{"items":[{"spec":{"nodeName":5}}]}"#,
            r#"{"items":[] } x"#,
            r#"{"items":[{"metadata":{"labels":{"a":"1"}}"#,
        ] {
            assert!(
                matches!(scan(bad), Err(ScanError::Invalid(why)) if why.contains("not a valid PodList")),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_visitor_stops_the_scan_with_its_reason() {
        let mut seen = 0;
        let err = scan_pod_list(br#"{"items":[{},{},{}]}"#, |_| {
            seen += 1;
            if seen == 2 {
                Err("enough".into())
            } else {
                Ok(())
            }
        })
        .unwrap_err();
        assert_eq!((seen, err), (2, ScanError::Stopped("enough".into())));
    }
}
