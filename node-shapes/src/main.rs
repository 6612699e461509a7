//! kata-node-shapes: watches the kata nodes and writes their shapes (one
//! entry per pool of identical nodes, `kata_runtime_policy::shapes`) into
//! a ConfigMap, which kata-runtime-policy reads instead of every node.
//!
//! Freshness: a watch applies every change within a second; the nodes are
//! listed again every `--relist-seconds`, and each view says until when
//! it may be used (`validUntil`, `--valid-seconds` after its last
//! complete list). A controller that stops, or a watch that stalls, lets
//! the view go stale, and the policy then reads the node list, as it does
//! without a view.

mod args;
mod tracker;

use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kata_runtime_policy::shapes::{BuildOptions, DATA_KEY};
use kube::api::{ApiResource, DynamicObject, Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use serde_json::{Value, json};

use args::{Args, USAGE};
use tracker::{Change, Tracker};

const MANAGER: &str = "kata-node-shapes";

fn now() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_secs()).unwrap_or(i64::MAX)
}

fn log(message: &str) {
    eprintln!("kata-node-shapes: {message}");
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = match Args::parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(why) => {
            eprintln!("kata-node-shapes: {why}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let client = match Client::try_default().await {
        Ok(client) => client,
        Err(e) => {
            log(&format!("no cluster to talk to: {e}"));
            return ExitCode::from(1);
        }
    };
    run(client, args).await;
    ExitCode::SUCCESS
}

async fn run(client: Client, args: Args) {
    // Nodes as the API serves them, fields this k8s-openapi does not know
    // included: the view carries what the policy reads, as it reads it.
    let nodes: Api<DynamicObject> = Api::all_with(client.clone(), &ApiResource::erase::<Node>(&()));
    let maps: Api<ConfigMap> = Api::namespaced(client, &args.namespace);
    let mut tracker = Tracker::new(BuildOptions {
        selector: args.selector.clone(),
        per_node_labels: args.per_node_labels.clone(),
        listed_at: 0,
        valid_for: args.valid_seconds,
        max_bytes: args.max_bytes,
    });
    log(&format!(
        "watching nodes {:?}, writing ConfigMap {}/{}",
        args.selector, args.namespace, args.name
    ));
    loop {
        // A new watcher lists again: each complete list renews the view.
        let mut config = watcher::Config::default().any_semantic();
        if !args.selector.trim().is_empty() {
            config = config.labels(args.selector.trim());
        }
        let mut events = watcher(nodes.clone(), config).default_backoff().boxed();
        let relist = tokio::time::sleep(Duration::from_secs(args.relist_seconds));
        tokio::pin!(relist);
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tokio::select! {
                event = events.next() => match event {
                    Some(Ok(event)) => tracker.apply(change(event), now()),
                    Some(Err(e)) => log(&format!("watching nodes: {e}")),
                    None => break,
                },
                _ = tick.tick() => {
                    if let Some(view) = tracker.due() {
                        write(&maps, &args, &view, &mut tracker).await;
                    }
                }
                _ = &mut relist => break,
            }
        }
    }
}

fn change(event: watcher::Event<DynamicObject>) -> Change {
    let value = |object: DynamicObject| serde_json::to_value(object).unwrap_or(Value::Null);
    match event {
        watcher::Event::Init => Change::Init,
        watcher::Event::InitApply(o) => Change::Listed(value(o)),
        watcher::Event::InitDone => Change::Done,
        watcher::Event::Apply(o) => Change::Applied(value(o)),
        watcher::Event::Delete(o) => Change::Deleted(value(o)),
    }
}

/// Server-side apply of the ConfigMap: created if missing, only its
/// labels and data owned by this controller.
async fn write(maps: &Api<ConfigMap>, args: &Args, view: &Value, tracker: &mut Tracker) {
    let map = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": args.name,
            "namespace": args.namespace,
            "labels": {"app.kubernetes.io/name": MANAGER, "app.kubernetes.io/part-of": "kata-runtime-policy"},
        },
        "data": {DATA_KEY: view.to_string()},
    });
    let params = PatchParams::apply(MANAGER).force();
    match maps.patch(&args.name, &params, &Patch::Apply(&map)).await {
        Ok(_) => log(&format!(
            "wrote {} nodes in {} shapes{}",
            tracker.node_count(),
            view["shapes"].as_array().map_or(0, Vec::len),
            view["unusable"]
                .as_str()
                .map(|w| format!(" (unusable: {w})"))
                .unwrap_or_default()
        )),
        Err(e) => {
            log(&format!(
                "cannot write ConfigMap {}/{}: {e}",
                args.namespace, args.name
            ));
            tracker.retry();
        }
    }
}
