//! Guest functions for the benchmark only (cargo feature `bench`; the shipped
//! `policy.wasm` never contains them).

use std::ops::ControlFlow;

use kubewarden_policy_sdk::wapc_guest::{self as guest, CallResult};

use crate::cluster::{Cluster, HostCluster, NodeMasks};
use crate::node::{HandlerReport, KeyFilter, Node, scan_node_list};
use crate::request;
use crate::settings::{HandlerCheck, Settings};

pub fn register() {
    guest::register_function("bench_floor", floor);
    guest::register_function("bench_floor_features", floor_features);
    guest::register_function("bench_memory_size", memory_size);
    guest::register_function("bench_scan", scan);
    guest::register_function("bench_scan_handlers", scan_handlers);
    guest::register_function("bench_transfer", transfer);
}

/// Only the node query and the host's copy of its answer into the guest:
/// the part of every case that no parsing strategy can avoid.
fn transfer(payload: &[u8]) -> CallResult {
    let settings = settings(payload);
    let bytes = HostCluster
        .kata_nodes(settings.host_label_selector(), masks(&settings, false))
        .map_err(|e| e.message)?;
    Ok(bytes.len().to_string().into_bytes())
}

fn settings(payload: &[u8]) -> Settings {
    request::parse(payload)
        .ok()
        .and_then(|p| p.settings.map(|s| Settings::from_json(s.get().as_bytes())))
        .and_then(Result::ok)
        .unwrap_or_default()
}

/// The node query the policy makes under these settings: for a pod that
/// needs no handler feature, or (`features`) for one that does.
fn masks(settings: &Settings, features: bool) -> NodeMasks {
    match settings.runtime_handler_check {
        HandlerCheck::Off => NodeMasks::Plain,
        _ if features => NodeMasks::HandlerFeatures,
        _ => NodeMasks::HandlerNames,
    }
}

/// The floor: the same node query the policy makes for a plain pod under
/// this payload's settings (the same field masks), with the answer only
/// validated as JSON. What any policy that reads the node list pays at least.
fn floor(payload: &[u8]) -> CallResult {
    validated(payload, false)
}

/// The floor of the query for pods that need a handler feature (whole
/// `status.runtimeHandlers` entries).
fn floor_features(payload: &[u8]) -> CallResult {
    validated(payload, true)
}

fn validated(payload: &[u8], features: bool) -> CallResult {
    let settings = settings(payload);
    let bytes = HostCluster
        .kata_nodes(settings.host_label_selector(), masks(&settings, features))
        .map_err(|e| e.message)?;
    serde_json::from_slice::<serde::de::IgnoredAny>(&bytes)?;
    Ok(b"{}".to_vec())
}

/// The policy's node reader alone over the plain pod's node query: every
/// node read (no label kept), nothing checked. What a policy that reads the
/// whole list with this reader pays before any filter.
fn scan(payload: &[u8]) -> CallResult {
    scanned(payload, |_| {})
}

/// [`scan`], and each node's runtime handlers searched for the handler
/// named by the payload's top-level `"handler"` (the RuntimeClass's).
fn scan_handlers(payload: &[u8]) -> CallResult {
    #[derive(serde::Deserialize)]
    struct Probe<'a> {
        handler: &'a str,
    }
    let handler = serde_json::from_slice::<Probe>(payload)
        .map_err(|e| format!("bench_scan_handlers needs a \"handler\": {e}"))?
        .handler;
    let mut listed = 0usize;
    let result = scanned(payload, |node| {
        if matches!(
            node.runtime_handlers.report(handler),
            HandlerReport::Listed(_)
        ) {
            listed += 1;
        }
    });
    result.map(|_| listed.to_string().into_bytes())
}

fn scanned(payload: &[u8], mut visit: impl FnMut(&Node)) -> CallResult {
    let settings = settings(payload);
    let bytes = HostCluster
        .kata_nodes(settings.host_label_selector(), masks(&settings, false))
        .map_err(|e| e.message)?;
    scan_node_list(&bytes, KeyFilter::Only(&[]), |node| {
        visit(node);
        ControlFlow::Continue(())
    })?;
    Ok(b"{}".to_vec())
}

/// The guest's linear memory size in bytes (it never shrinks: a high-water mark).
fn memory_size(_: &[u8]) -> CallResult {
    #[cfg(target_arch = "wasm32")]
    let bytes = core::arch::wasm32::memory_size(0) * 65536;
    #[cfg(not(target_arch = "wasm32"))]
    let bytes = 0usize;
    Ok(bytes.to_string().into_bytes())
}
