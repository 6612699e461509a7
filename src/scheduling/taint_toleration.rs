//! The TaintToleration filter, and the toleration matching it rests on
//! (`k8s.io/api/core/v1` `Toleration.ToleratesTaint`).

use k8s_openapi::api::core::v1::Toleration;

use crate::node::Taint;

pub const NO_SCHEDULE: &str = "NoSchedule";
pub const NO_EXECUTE: &str = "NoExecute";

/// Whether one toleration tolerates one taint.
pub fn tolerates(
    toleration: &Toleration,
    taint_key: &str,
    taint_value: &str,
    taint_effect: &str,
) -> bool {
    let effect = toleration.effect.as_deref().unwrap_or_default();
    // An empty effect matches every effect.
    if !effect.is_empty() && effect != taint_effect {
        return false;
    }
    // An empty key matches every key (API validation allows it only with Exists).
    let key = toleration.key.as_deref().unwrap_or_default();
    if !key.is_empty() && key != taint_key {
        return false;
    }
    let value = toleration.value.as_deref().unwrap_or_default();
    match toleration.operator.as_deref().unwrap_or_default() {
        "" | "Equal" => value == taint_value,
        "Exists" => true,
        // KEP-5471: the TAINT's value compared to the toleration's, as integers.
        "Lt" => compare(taint_value, value).is_some_and(|(taint, tol)| taint < tol),
        "Gt" => compare(taint_value, value).is_some_and(|(taint, tol)| taint > tol),
        _ => false,
    }
}

/// Both values as int64 in canonical decimal form ("0" or -?[1-9][0-9]*);
/// anything else (leading zeros, '+', blanks, overflow) tolerates nothing.
fn compare(taint: &str, toleration: &str) -> Option<(i64, i64)> {
    Some((canonical_int(taint)?, canonical_int(toleration)?))
}

fn canonical_int(s: &str) -> Option<i64> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    let canonical = s == "0"
        || (digits
            .as_bytes()
            .first()
            .is_some_and(|b| (b'1'..=b'9').contains(b))
            && digits.bytes().all(|b| b.is_ascii_digit()));
    if canonical { s.parse().ok() } else { None }
}

/// Whether any of the tolerations tolerates the taint.
pub fn any_tolerates(tolerations: &[Toleration], key: &str, value: &str, effect: &str) -> bool {
    tolerations.iter().any(|t| tolerates(t, key, value, effect))
}

/// The first of the node's taints, in node order, that has one of `effects`
/// and that no toleration tolerates: the taint the scheduler reports.
pub fn first_untolerated<'t, 'n>(
    taints: &'t [Taint<'n>],
    tolerations: &[Toleration],
    effects: &[&str],
) -> Option<&'t Taint<'n>> {
    taints.iter().find(|taint| {
        effects.contains(&taint.effect.as_str())
            && !any_tolerates(
                tolerations,
                taint.key.as_str(),
                taint.value(),
                taint.effect.as_str(),
            )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tol(v: serde_json::Value) -> Toleration {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn toleration_matrix() {
        // (toleration, taint key, taint value, taint effect, tolerated)
        let cases = [
            (
                json!({"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}),
                "k",
                "v",
                "NoSchedule",
                true,
            ),
            (
                json!({"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}),
                "k",
                "w",
                "NoSchedule",
                false,
            ),
            (
                json!({"key": "k", "value": "v", "effect": "NoSchedule"}),
                "k",
                "v",
                "NoSchedule",
                true,
            ),
            (
                json!({"key": "k", "value": "v"}),
                "k",
                "w",
                "NoSchedule",
                false,
            ),
            (
                json!({"key": "k", "operator": "Equal", "effect": "NoSchedule"}),
                "k",
                "",
                "NoSchedule",
                true,
            ),
            (
                json!({"key": "k", "operator": "Exists", "value": "ignored"}),
                "k",
                "anything",
                "NoExecute",
                true,
            ),
            (
                json!({"key": "k", "operator": "Exists", "effect": "NoSchedule"}),
                "k",
                "v",
                "NoExecute",
                false,
            ),
            (
                json!({"key": "k", "operator": "Exists"}),
                "other",
                "v",
                "NoSchedule",
                false,
            ),
            (
                json!({"operator": "Exists"}),
                "any",
                "thing",
                "NoExecute",
                true,
            ),
            (
                json!({"operator": "Exists", "effect": "NoSchedule"}),
                "any",
                "thing",
                "NoExecute",
                false,
            ),
            (json!({"value": "v"}), "any", "v", "NoSchedule", true),
            (json!({"value": "v"}), "any", "w", "NoSchedule", false),
            (
                json!({"key": "k", "operator": "Bogus", "value": "v"}),
                "k",
                "v",
                "NoSchedule",
                false,
            ),
            (
                json!({"key": "k", "operator": "equal", "value": "v"}),
                "k",
                "v",
                "NoSchedule",
                false,
            ),
            // Lt/Gt: taint value compared to the toleration's.
            (
                json!({"key": "sla", "operator": "Lt", "value": "100"}),
                "sla",
                "99",
                "NoSchedule",
                true,
            ),
            (
                json!({"key": "sla", "operator": "Lt", "value": "100"}),
                "sla",
                "100",
                "NoSchedule",
                false,
            ),
            (
                json!({"key": "sla", "operator": "Lt", "value": "100"}),
                "sla",
                "101",
                "NoSchedule",
                false,
            ),
            (
                json!({"key": "sla", "operator": "Gt", "value": "100"}),
                "sla",
                "101",
                "NoSchedule",
                true,
            ),
            (
                json!({"key": "sla", "operator": "Gt", "value": "100"}),
                "sla",
                "100",
                "NoSchedule",
                false,
            ),
            (
                json!({"key": "sla", "operator": "Gt", "value": "100"}),
                "sla",
                "99",
                "NoSchedule",
                false,
            ),
            (
                json!({"key": "sla", "operator": "Gt", "value": "-5"}),
                "sla",
                "0",
                "NoSchedule",
                true,
            ),
            (
                json!({"key": "sla", "operator": "Gt", "value": "1"}),
                "sla",
                "high",
                "NoSchedule",
                false,
            ),
            (
                json!({"key": "sla", "operator": "Gt", "value": "x"}),
                "sla",
                "5",
                "NoSchedule",
                false,
            ),
            (
                json!({"key": "sla", "operator": "Gt", "value": "1"}),
                "sla",
                "007",
                "NoSchedule",
                false,
            ),
            (
                json!({"key": "sla", "operator": "Gt", "value": "1"}),
                "sla",
                "+7",
                "NoSchedule",
                false,
            ),
            (
                json!({"key": "sla", "operator": "Lt", "value": "1"}),
                "sla",
                "-0",
                "NoSchedule",
                false,
            ),
            (
                json!({"key": "sla", "operator": "Gt", "value": "1"}),
                "sla",
                "99999999999999999999",
                "NoSchedule",
                false,
            ),
            (
                json!({"key": "sla", "operator": "Gt", "value": "1", "effect": "NoExecute"}),
                "sla",
                "5",
                "NoSchedule",
                false,
            ),
            (
                json!({"key": "sla", "operator": "Gt", "value": "1"}),
                "other",
                "5",
                "NoSchedule",
                false,
            ),
        ];
        for (t, key, value, effect, want) in cases {
            assert_eq!(
                tolerates(&tol(t.clone()), key, value, effect),
                want,
                "{t} vs {key}={value}:{effect}"
            );
        }
    }

    #[test]
    fn only_the_given_effects_block_and_node_order_decides_which_is_reported() {
        let taints = vec![
            Taint {
                key: crate::node::Str("soft".into()),
                value: None,
                effect: crate::node::Str("PreferNoSchedule".into()),
            },
            Taint {
                key: crate::node::Str("a".into()),
                value: Some(crate::node::Str("1".into())),
                effect: crate::node::Str("NoSchedule".into()),
            },
            Taint {
                key: crate::node::Str("b".into()),
                value: None,
                effect: crate::node::Str("NoExecute".into()),
            },
        ];
        let none: Vec<Toleration> = vec![];
        let effects = [NO_SCHEDULE, NO_EXECUTE];
        assert_eq!(
            first_untolerated(&taints, &none, &effects).map(|t| t.key.as_str()),
            Some("a")
        );
        assert_eq!(
            first_untolerated(&taints, &none, &[NO_EXECUTE]).map(|t| t.key.as_str()),
            Some("b")
        );
        let tolerate_a = vec![tol(json!({"key": "a", "operator": "Exists"}))];
        assert_eq!(
            first_untolerated(&taints, &tolerate_a, &effects).map(|t| t.key.as_str()),
            Some("b")
        );
        let all = vec![tol(json!({"operator": "Exists"}))];
        assert_eq!(first_untolerated(&taints, &all, &effects), None);
        assert_eq!(
            first_untolerated(&taints[..1], &none, &effects),
            None,
            "PreferNoSchedule never blocks"
        );
    }
}
