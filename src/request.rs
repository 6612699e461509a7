//! The `validate` payload policy-server sends, `{"request": AdmissionRequest,
//! "settings": {...}}`, read without building a JSON tree: the object stays
//! raw text so that a mutation can leave every other byte of it alone.

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::json::Str;

#[derive(Debug, Deserialize)]
pub struct Payload<'a> {
    #[serde(borrow)]
    pub request: AdmissionRequest<'a>,
    #[serde(borrow, default)]
    pub settings: Option<&'a RawValue>,
}

#[derive(Debug, Default, Deserialize)]
pub struct GroupVersionKind<'a> {
    #[serde(borrow, default)]
    pub group: Str<'a>,
    #[serde(borrow, default)]
    pub version: Str<'a>,
    #[serde(borrow, default)]
    pub kind: Str<'a>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionRequest<'a> {
    #[serde(borrow, default)]
    pub uid: Str<'a>,
    #[serde(borrow, default)]
    pub kind: GroupVersionKind<'a>,
    #[serde(borrow, default)]
    pub sub_resource: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub operation: Str<'a>,
    #[serde(borrow, default)]
    pub namespace: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub object: Option<&'a RawValue>,
}

impl AdmissionRequest<'_> {
    /// A core/v1 Pod being created (not a subresource such as `pods/binding`
    /// or `pods/eviction`, which are CREATEs too).
    pub fn is_pod_create(&self) -> bool {
        self.kind.group.as_str().is_empty()
            && self.kind.kind.as_str() == "Pod"
            && self.operation.as_str() == "CREATE"
            && self
                .sub_resource
                .as_ref()
                .is_none_or(|s| s.as_str().is_empty())
    }

    /// `Pod CREATE`, `apps/Deployment UPDATE`, … for messages.
    pub fn describe(&self) -> String {
        let group = self.kind.group.as_str();
        let slash = if group.is_empty() { "" } else { "/" };
        format!(
            "{group}{slash}{} {}",
            self.kind.kind.as_str(),
            self.operation.as_str()
        )
    }
}

pub fn parse(payload: &[u8]) -> Result<Payload<'_>, String> {
    serde_json::from_slice(payload)
        .map_err(|e| format!("the request is not a valid Kubewarden validation request: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_pod_creates_only() {
        let case = |kind: &str, group: &str, op: &str, sub: &str| {
            let json = format!(
                r#"{{"request":{{"uid":"1","kind":{{"group":"{group}","version":"v1","kind":"{kind}"}},"subResource":"{sub}","operation":"{op}","object":{{}}}},"settings":{{}}}}"#
            );
            parse(json.as_bytes()).unwrap().request.is_pod_create()
        };
        assert!(case("Pod", "", "CREATE", ""));
        assert!(!case("Pod", "", "UPDATE", ""));
        assert!(!case("Pod", "", "CREATE", "binding"));
        assert!(!case("Deployment", "apps", "CREATE", ""));
        assert!(!case("Pod", "example.com", "CREATE", ""));
    }

    #[test]
    fn keeps_the_object_raw() {
        let p = parse(br#"{"request":{"uid":"u","kind":{"kind":"Pod"},"operation":"CREATE","object":{"b": 1.50, "a":[ ]}}}"#).unwrap();
        assert_eq!(p.request.object.unwrap().get(), r#"{"b": 1.50, "a":[ ]}"#);
        assert!(p.settings.is_none());
        assert_eq!(p.request.describe(), "Pod CREATE");
    }

    #[test]
    fn refuses_non_requests() {
        for bad in [&b""[..], b"{}", b"[]", b"{\"request\":5}", b"\xff"] {
            assert!(
                parse(bad)
                    .unwrap_err()
                    .contains("not a valid Kubewarden validation request")
            );
        }
    }
}
