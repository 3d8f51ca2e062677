//! Proves the fake Kubernetes API server (`support::fake_kube`) against the real kube 5 client
//! and watcher, on the paths k8s-and-helm-testing.md §2.3 lists: paged lists, watch events with
//! selectors, 410 relists, dropped connections, field selectors, namespaced paths, streaming
//! lists, kubeconfig, injected failures, and the raw wire format.

mod support;

use std::collections::BTreeSet;
use std::pin::pin;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{ListParams, WatchEvent, WatchParams};
use kube::runtime::watcher::{self, Event, watcher};
use kube::{Api, Client, ResourceExt};
use serde_json::{Value, json};
use support::fake_kube::{FakeKube, RecordedRequest, TOKEN};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::timeout;

/// Long enough for a loaded CI machine, short enough that a hang fails the test.
const WAIT: Duration = Duration::from_secs(10);

fn client(fake: &FakeKube) -> Client {
    let config = kube::Config::new(fake.url().parse().expect("fake url is a URI"));
    Client::try_from(config).expect("build kube client")
}

fn pod(ns: &str, name: &str, labels: &[(&str, &str)]) -> Value {
    let labels: serde_json::Map<String, Value> = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), json!(v)))
        .collect();
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": ns, "name": name, "labels": labels},
        "spec": {"containers": [{"name": "app", "image": "busybox"}]},
    })
}

fn pod_on(ns: &str, name: &str, node: Option<&str>, phase: &str) -> Value {
    let mut p = pod(ns, name, &[("app", "demo")]);
    if let Some(node) = node {
        p["spec"]["nodeName"] = json!(node);
    }
    p["status"] = json!({"phase": phase});
    p
}

fn describe(event: &Event<Pod>) -> String {
    match event {
        Event::Init => "Init".to_owned(),
        Event::InitApply(p) => format!("InitApply {}", p.name_any()),
        Event::InitDone => "InitDone".to_owned(),
        Event::Apply(p) => format!("Apply {}", p.name_any()),
        Event::Delete(p) => format!("Delete {}", p.name_any()),
    }
}

/// A watcher running in its own task, as product code runs it: the watch request is made
/// (and stays open) whether or not the test is reading events.
struct PodWatch {
    events: mpsc::UnboundedReceiver<Result<Event<Pod>, watcher::Error>>,
    task: JoinHandle<()>,
}

impl Drop for PodWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn spawn_watcher(api: Api<Pod>, config: watcher::Config) -> PodWatch {
    let (tx, events) = mpsc::unbounded_channel();
    let task = tokio::spawn(async move {
        let mut stream = pin!(watcher(api, config));
        while let Some(item) = stream.next().await {
            if tx.send(item).is_err() {
                break;
            }
        }
    });
    PodWatch { events, task }
}

impl PodWatch {
    async fn next_event(&mut self) -> Result<Event<Pod>, watcher::Error> {
        timeout(WAIT, self.events.recv())
            .await
            .expect("a watcher event within the wait")
            .expect("the watcher stream never ends")
    }

    async fn expect_events(&mut self, expected: &[&str]) {
        for want in expected {
            let event = self.next_event().await.expect("no watcher error here");
            assert_eq!(describe(&event), *want);
        }
    }
}

fn names(pods: &[Pod]) -> Vec<String> {
    pods.iter().map(ResourceExt::name_any).collect()
}

async fn list_names(api: &Api<Pod>, lp: &ListParams) -> Vec<String> {
    let list = timeout(WAIT, api.list(lp))
        .await
        .expect("list answers")
        .expect("list succeeds");
    names(&list.items)
}

fn watches(fake: &FakeKube) -> Vec<RecordedRequest> {
    fake.requests()
        .into_iter()
        .filter(RecordedRequest::is_watch)
        .collect()
}

fn lists(fake: &FakeKube, path: &str) -> Vec<RecordedRequest> {
    fake.requests()
        .into_iter()
        .filter(|r| r.is_list(path))
        .collect()
}

fn api_status(err: kube::Error) -> kube::core::Status {
    match err {
        kube::Error::Api(status) => *status,
        other => panic!("expected an API status error, got {other:?}"),
    }
}

#[tokio::test]
async fn list_pages_with_limit_and_continue() {
    let fake = FakeKube::start().await;
    for i in 0..1200 {
        fake.apply(pod("default", &format!("p-{i:04}"), &[("app", "demo")]));
    }
    let snapshot = fake.resource_version().to_string();
    let api: Api<Pod> = Api::all(client(&fake));

    let mut seen = Vec::new();
    let mut token: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut lp = ListParams::default().limit(500);
        if let Some(t) = token.take() {
            lp = lp.continue_token(&t);
        }
        let page = timeout(WAIT, api.list(&lp))
            .await
            .expect("list answers")
            .expect("list succeeds");
        pages += 1;
        assert_eq!(
            page.metadata.resource_version.as_deref(),
            Some(snapshot.as_str()),
            "every page carries the snapshot version"
        );
        if pages == 1 {
            assert_eq!(page.metadata.remaining_item_count, Some(700));
            // Created between pages, after the last key served: a later page shows it.
            fake.apply(pod("default", "p-9999", &[]));
        }
        seen.extend(names(&page.items));
        match page.metadata.continue_ {
            Some(t) if !t.is_empty() => token = Some(t),
            _ => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen.len(), 1201);
    let unique: BTreeSet<_> = seen.iter().cloned().collect();
    assert_eq!(unique.len(), 1201, "no page repeats an item");
    assert_eq!(seen.first().map(String::as_str), Some("p-0000"));
    assert_eq!(seen.last().map(String::as_str), Some("p-9999"));

    // The watcher pages by itself (500 per page by default).
    fake.clear_requests();
    let mut events = spawn_watcher(api, watcher::Config::default());
    events.expect_events(&["Init"]).await;
    let mut applied = 0;
    loop {
        match events.next_event().await.expect("no watcher error") {
            Event::InitApply(_) => applied += 1,
            Event::InitDone => break,
            other => panic!("unexpected {}", describe(&other)),
        }
    }
    assert_eq!(applied, 1201);
    let list_requests = lists(&fake, "/api/v1/pods");
    assert_eq!(list_requests.len(), 3);
    assert!(
        list_requests
            .iter()
            .all(|r| r.param("limit") == Some("500"))
    );
    assert!(list_requests[0].param("continue").is_none());
    assert!(
        list_requests[1..]
            .iter()
            .all(|r| r.param("continue").is_some())
    );
}

#[tokio::test]
async fn watcher_sees_adds_deletes_and_selector_moves() {
    let fake = FakeKube::start().await;
    fake.apply(pod("default", "web-1", &[("app", "demo")]));
    fake.apply(pod("default", "web-2", &[("app", "demo")]));
    fake.apply(pod("default", "db-1", &[("app", "db")]));
    let api: Api<Pod> = Api::all(client(&fake));
    let mut events = spawn_watcher(api, watcher::Config::default().labels("app=demo"));

    events
        .expect_events(&["Init", "InitApply web-1", "InitApply web-2", "InitDone"])
        .await;

    fake.apply(pod("default", "web-3", &[("app", "demo")]));
    events.expect_events(&["Apply web-3"]).await;

    fake.apply(pod("default", "web-1", &[("app", "gone")]));
    events.expect_events(&["Delete web-1"]).await;

    fake.apply(pod("default", "db-1", &[("app", "demo")]));
    events.expect_events(&["Apply db-1"]).await;

    fake.delete("pods", Some("default"), "web-2");
    events.expect_events(&["Delete web-2"]).await;

    // Deleting a pod outside the selector is invisible; the next event is the following add.
    fake.delete("pods", Some("default"), "web-1");
    fake.apply(pod("default", "web-4", &[("app", "demo")]));
    events.expect_events(&["Apply web-4"]).await;

    // A modification inside the selector is an Apply with the new state.
    let mut changed = pod("default", "web-4", &[("app", "demo"), ("tier", "front")]);
    changed["spec"]["nodeName"] = json!("n9");
    fake.apply(changed);
    match events.next_event().await.expect("no watcher error") {
        Event::Apply(p) => {
            assert_eq!(p.labels().get("tier").map(String::as_str), Some("front"));
            assert_eq!(p.spec.and_then(|s| s.node_name).as_deref(), Some("n9"));
        }
        other => panic!("unexpected {}", describe(&other)),
    }

    let watch = &watches(&fake)[0];
    assert_eq!(watch.path, "/api/v1/pods");
    assert_eq!(watch.param("labelSelector"), Some("app=demo"));
    assert_eq!(watch.param("allowWatchBookmarks"), Some("true"));
    assert_eq!(watch.param("resourceVersion"), Some("1003"));
}

#[tokio::test]
async fn expired_watch_makes_the_watcher_relist() {
    let fake = FakeKube::start().await;
    fake.apply(pod("default", "web-1", &[("app", "demo")]));
    fake.apply(pod("default", "web-2", &[("app", "demo")]));
    let api: Api<Pod> = Api::all(client(&fake));
    let mut events = spawn_watcher(api, watcher::Config::default().labels("app=demo"));
    events
        .expect_events(&["Init", "InitApply web-1", "InitApply web-2", "InitDone"])
        .await;
    fake.apply(pod("default", "web-3", &[("app", "demo")]));
    events.expect_events(&["Apply web-3"]).await;
    fake.wait_for_watches(1, WAIT).await;

    fake.expire_watches();
    fake.delete("pods", Some("default"), "web-2");
    fake.apply(pod("default", "web-4", &[("app", "demo")]));

    match events.next_event().await {
        Err(watcher::Error::WatchError(status)) => {
            assert_eq!(status.code, 410);
            assert_eq!(status.reason, "Expired");
            assert_eq!(status.message, "too old resource version: 1003 (1004)");
        }
        other => panic!("expected the in-stream 410, got {other:?}"),
    }
    events
        .expect_events(&[
            "Init",
            "InitApply web-1",
            "InitApply web-3",
            "InitApply web-4",
            "InitDone",
        ])
        .await;
    assert_eq!(lists(&fake, "/api/v1/pods").len(), 2, "one relist");
    fake.wait_for_watches(1, WAIT).await;
    fake.apply(pod("default", "web-5", &[("app", "demo")]));
    events.expect_events(&["Apply web-5"]).await;
}

#[tokio::test]
async fn dropped_watch_resumes_from_last_version_without_relist() {
    let fake = FakeKube::start().await;
    // No bookmarks during the test, so the resume version is exactly the list's.
    fake.set_bookmark_interval(Duration::from_secs(3600));
    fake.apply(pod("default", "web-1", &[("app", "demo")]));
    let api: Api<Pod> = Api::all(client(&fake));
    let mut events = spawn_watcher(api, watcher::Config::default().labels("app=demo"));
    events
        .expect_events(&["Init", "InitApply web-1", "InitDone"])
        .await;
    fake.wait_for_watches(1, WAIT).await;
    let first = watches(&fake);
    assert_eq!(first.len(), 1);
    let resume_from = first[0].param("resourceVersion").map(str::to_owned);

    fake.drop_watches();
    fake.apply(pod("default", "web-2", &[("app", "demo")]));
    // kube treats the cut as the end of the stream; an error item is tolerated, a re-init not.
    loop {
        match events.next_event().await {
            Ok(event) => {
                assert_eq!(describe(&event), "Apply web-2");
                break;
            }
            Err(err) => eprintln!("tolerated watcher error after the cut: {err}"),
        }
    }
    let all = watches(&fake);
    assert_eq!(all.len(), 2, "one re-watch");
    assert_eq!(
        all[1].param("resourceVersion").map(str::to_owned),
        resume_from
    );
    assert_eq!(lists(&fake, "/api/v1/pods").len(), 1, "no relist");

    fake.wait_for_watches(1, WAIT).await;
    fake.delete("pods", Some("default"), "web-1");
    events.expect_events(&["Delete web-1"]).await;
}

/// The faults behind discovery's timeouts: a stalled server leaves open watches silent for good
/// (no events, no bookmarks, no end at `timeoutSeconds`) and holds new requests unanswered;
/// only a drop or the client's own timeout ends them.
#[tokio::test]
async fn stalled_watches_and_lists_never_answer() {
    let fake = FakeKube::start().await;
    fake.set_bookmark_interval(Duration::from_millis(100));
    fake.apply(pod("default", "web-1", &[]));
    let api: Api<Pod> = Api::all(client(&fake));
    let listed = timeout(WAIT, api.list(&ListParams::default()))
        .await
        .expect("list answers")
        .expect("list succeeds");
    let version = listed.metadata.resource_version.expect("list version");
    let wp = WatchParams::default().timeout(1);
    let mut open = timeout(WAIT, api.watch(&wp, &version))
        .await
        .expect("watch answers")
        .expect("watch starts")
        .boxed();
    fake.wait_for_watches(1, WAIT).await;

    fake.stall_watches();
    fake.apply(pod("default", "web-2", &[]));
    // Past the watch's timeoutSeconds and many bookmark intervals: nothing at all. (A broken
    // stall would show an event or the end within the wait; a slow machine cannot fail this.)
    let silent = timeout(Duration::from_millis(2500), open.next()).await;
    assert!(
        silent.is_err(),
        "a stalled watch said something: {silent:?}"
    );

    // New watch requests are accepted and held.
    let held = tokio::spawn({
        let api = api.clone();
        let version = version.clone();
        async move {
            api.watch(&WatchParams::default(), &version)
                .await
                .map(|_| ())
        }
    });
    wait_until(|| fake.hung_requests() == 1).await;
    // Lists still answer, until they are stalled too.
    assert_eq!(
        list_names(&api, &ListParams::default()).await,
        ["web-1", "web-2"]
    );
    fake.stall_lists();
    let held_list = tokio::spawn({
        let api = api.clone();
        async move { api.list(&ListParams::default()).await.map(|_| ()) }
    });
    wait_until(|| fake.hung_requests() == 2).await;

    // Lifting the stall answers new requests (the watch replays what the silent one missed),
    // while what was stalled stays so.
    fake.unstall();
    let mut fresh = timeout(WAIT, api.watch(&wp, &version))
        .await
        .expect("watch answers")
        .expect("watch starts")
        .boxed();
    match timeout(WAIT, fresh.next()).await.expect("an event") {
        Some(Ok(WatchEvent::Added(p))) => assert_eq!(p.name_any(), "web-2"),
        other => panic!("expected ADDED web-2, got {other:?}"),
    }
    assert_eq!(fake.hung_requests(), 2);
    assert!(!held.is_finished() && !held_list.is_finished());

    // A drop cuts the silent watch; shutdown answers the held requests.
    fake.drop_watches();
    let end = timeout(WAIT, open.next()).await.expect("the cut ends it");
    assert!(!matches!(end, Some(Ok(_))), "{end:?}");
    fake.shutdown();
    let held = timeout(WAIT, held).await.expect("answered at shutdown");
    assert!(matches!(held, Ok(Err(_))), "{held:?}");
    timeout(WAIT, held_list)
        .await
        .expect("answered at shutdown")
        .expect("join")
        .expect_err("503 at shutdown");
    assert_eq!(fake.hung_requests(), 0);
}

/// etcd without the watch cache refuses a watch from a compacted version with HTTP 410 rather
/// than a 200 and an in-stream ERROR.
#[tokio::test]
async fn expired_watch_refused_with_http_410() {
    let fake = FakeKube::start().await;
    fake.apply(pod("default", "web-1", &[]));
    let api: Api<Pod> = Api::all(client(&fake));
    let version = fake.resource_version().to_string();
    fake.compact();
    fake.set_expired_as_status(true);
    let err = timeout(WAIT, api.watch(&WatchParams::default(), &version))
        .await
        .expect("watch answers")
        .err()
        .expect("refused");
    let status = api_status(err);
    assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
    assert_eq!(
        status.message,
        format!("too old resource version: {version} (1002)")
    );

    // From a version still in the log the watch starts as usual.
    let now = fake.resource_version().to_string();
    let _started = timeout(WAIT, api.watch(&WatchParams::default(), &now))
        .await
        .expect("watch answers")
        .expect("watch starts");
}

/// Polls `f` until it holds; panics after the wait.
async fn wait_until(f: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !f() {
        assert!(tokio::time::Instant::now() < deadline, "condition not met");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn field_selectors_filter_and_unknown_fields_are_rejected() {
    let fake = FakeKube::start().await;
    fake.apply(pod_on("default", "a", Some("n1"), "Running"));
    fake.apply(pod_on("default", "b", Some("n2"), "Running"));
    fake.apply(pod_on("other", "c", Some("n1"), "Succeeded"));
    fake.apply(pod_on("default", "d", None, "Pending"));
    let client = client(&fake);
    let api: Api<Pod> = Api::all(client.clone());

    let by = |f: &str| ListParams::default().fields(f);
    assert_eq!(list_names(&api, &by("spec.nodeName=n1")).await, ["a", "c"]);
    assert_eq!(list_names(&api, &by("spec.nodeName!=n1")).await, ["b", "d"]);
    assert_eq!(
        list_names(&api, &by("spec.nodeName==n1,metadata.namespace=other")).await,
        ["c"]
    );
    assert_eq!(list_names(&api, &by("spec.nodeName=")).await, ["d"]);
    assert_eq!(
        list_names(&api, &by("status.phase!=Running")).await,
        ["d", "c"],
        "sorted by namespace, then name"
    );
    assert_eq!(list_names(&api, &by("metadata.name=b")).await, ["b"]);

    let err = api
        .list(&by("spec.foo=x"))
        .await
        .expect_err("unsupported field");
    let status = api_status(err);
    assert_eq!(status.code, 400);
    assert_eq!(status.reason, "BadRequest");
    assert_eq!(status.message, "field label not supported: spec.foo");

    // Services do not index spec.nodeName.
    let services: Api<Service> = Api::all(client);
    let err = services
        .list(&ListParams::default().fields("spec.nodeName=n1"))
        .await
        .expect_err("services have no spec.nodeName field");
    assert_eq!(api_status(err).code, 400);

    let mut events = spawn_watcher(api, watcher::Config::default().fields("spec.nodeName=n1"));
    events
        .expect_events(&["Init", "InitApply a", "InitApply c", "InitDone"])
        .await;
    fake.apply(pod_on("default", "b", Some("n1"), "Running"));
    events.expect_events(&["Apply b"]).await;
    fake.apply(pod_on("default", "a", Some("n3"), "Running"));
    events.expect_events(&["Delete a"]).await;
}

#[tokio::test]
async fn label_selector_operators() {
    let fake = FakeKube::start().await;
    fake.apply(pod("default", "web", &[("app", "web"), ("tier", "front")]));
    fake.apply(pod("default", "db", &[("app", "db")]));
    fake.apply(pod("default", "bare", &[]));
    let api: Api<Pod> = Api::all(client(&fake));
    let by = |s: &str| ListParams::default().labels(s);

    assert_eq!(
        list_names(&api, &by("app in (web, db)")).await,
        ["db", "web"]
    );
    assert_eq!(
        list_names(&api, &by("app notin (web)")).await,
        ["bare", "db"]
    );
    assert_eq!(list_names(&api, &by("tier")).await, ["web"]);
    assert_eq!(list_names(&api, &by("!tier")).await, ["bare", "db"]);
    assert_eq!(list_names(&api, &by("app!=web")).await, ["bare", "db"]);
    assert_eq!(list_names(&api, &by("app==web,tier=front")).await, ["web"]);
    assert_eq!(list_names(&api, &by("app,!tier")).await, ["db"]);

    let err = api
        .list(&by("app ~ web"))
        .await
        .expect_err("not a selector");
    let status = api_status(err);
    assert_eq!((status.code, status.reason.as_str()), (400, "BadRequest"));
}

#[tokio::test]
async fn namespaced_paths_only_see_their_namespace() {
    let fake = FakeKube::start().await;
    fake.apply(pod("otel", "x", &[]));
    fake.apply(pod("otel", "y", &[]));
    fake.apply(pod("default", "z", &[]));
    fake.apply(pod("kube-system", "w", &[]));
    let client = client(&fake);
    let api: Api<Pod> = Api::namespaced(client.clone(), "otel");

    assert_eq!(list_names(&api, &ListParams::default()).await, ["x", "y"]);
    let last = fake.requests().pop().expect("a recorded request");
    assert_eq!(last.path, "/api/v1/namespaces/otel/pods");
    assert_eq!(
        list_names(&Api::all(client.clone()), &ListParams::default()).await,
        ["z", "w", "x", "y"],
        "all namespaces, sorted by namespace then name"
    );

    let x = api.get("x").await.expect("get x");
    assert_eq!(x.namespace().as_deref(), Some("otel"));
    assert!(x.resource_version().is_some());
    assert!(x.uid().is_some());
    let status = api_status(api.get("z").await.expect_err("z is in default"));
    assert_eq!((status.code, status.reason.as_str()), (404, "NotFound"));

    let mut events = spawn_watcher(api, watcher::Config::default());
    events
        .expect_events(&["Init", "InitApply x", "InitApply y", "InitDone"])
        .await;
    fake.apply(pod("default", "elsewhere", &[]));
    fake.apply(pod("otel", "v", &[]));
    events.expect_events(&["Apply v"]).await;
    assert!(
        watches(&fake)
            .iter()
            .all(|w| w.path == "/api/v1/namespaces/otel/pods")
    );
}

#[tokio::test]
async fn streaming_list_ends_with_the_initial_events_bookmark() {
    let fake = FakeKube::start().await;
    fake.apply(pod("default", "web-1", &[("app", "demo")]));
    fake.apply(pod("default", "web-2", &[("app", "demo")]));
    fake.apply(pod("default", "db-1", &[("app", "db")]));
    let api: Api<Pod> = Api::all(client(&fake));
    let config = watcher::Config::default()
        .labels("app=demo")
        .streaming_lists();
    let mut events = spawn_watcher(api, config);
    events
        .expect_events(&["Init", "InitApply web-1", "InitApply web-2", "InitDone"])
        .await;
    fake.apply(pod("default", "web-3", &[("app", "demo")]));
    events.expect_events(&["Apply web-3"]).await;

    assert!(lists(&fake, "/api/v1/pods").is_empty(), "no list call");
    let watch = &watches(&fake)[0];
    assert_eq!(watch.param("sendInitialEvents"), Some("true"));
    assert_eq!(watch.param("resourceVersionMatch"), Some("NotOlderThan"));
}

#[tokio::test]
async fn kubeconfig_file_drives_a_real_client() {
    let fake = FakeKube::start().await;
    fake.set_required_token(Some(TOKEN));
    fake.apply(pod("default", "mine", &[]));
    fake.apply(pod("otel", "theirs", &[]));
    let dir = tempfile::tempdir().expect("temp dir");
    let path = fake.kubeconfig(dir.path());

    let kubeconfig = kube::config::Kubeconfig::read_from(&path).expect("read kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("config from kubeconfig");
    assert_eq!(config.default_namespace, "default");
    let client = Client::try_from(config).expect("client from kubeconfig");
    let api: Api<Pod> = Api::default_namespaced(client);
    assert_eq!(list_names(&api, &ListParams::default()).await, ["mine"]);
    let last = fake.requests().pop().expect("a recorded request");
    assert_eq!(last.path, "/api/v1/namespaces/default/pods");
    assert_eq!(
        last.header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );

    // Without the token the fake refuses, like a server with authentication on.
    let anonymous: Api<Pod> = Api::all(self::client(&fake));
    let status = api_status(
        anonymous
            .list(&ListParams::default())
            .await
            .expect_err("no token"),
    );
    assert_eq!((status.code, status.reason.as_str()), (401, "Unauthorized"));
}

#[tokio::test]
async fn injected_failures() {
    let fake = FakeKube::start().await;
    fake.apply(pod("default", "web-1", &[("app", "demo")]));
    let api: Api<Pod> = Api::all(client(&fake));

    fake.fail_next(500, 1);
    let status = api_status(
        api.list(&ListParams::default())
            .await
            .expect_err("injected 500"),
    );
    assert_eq!(
        (status.code, status.reason.as_str()),
        (500, "InternalError")
    );
    assert_eq!(list_names(&api, &ListParams::default()).await, ["web-1"]);

    // kube's default client retries 503 by itself: two failures, then success, one call.
    fake.clear_requests();
    fake.fail_next(503, 2);
    assert_eq!(list_names(&api, &ListParams::default()).await, ["web-1"]);
    assert_eq!(fake.requests().len(), 3);

    // A failed initial list surfaces as an error and the watcher starts over.
    fake.fail_next(500, 1);
    let mut events = spawn_watcher(api, watcher::Config::default());
    events.expect_events(&["Init"]).await;
    match events.next_event().await {
        Err(watcher::Error::InitialListFailed(_)) => {}
        other => panic!("expected InitialListFailed, got {other:?}"),
    }
    events
        .expect_events(&["Init", "InitApply web-1", "InitDone"])
        .await;
}

#[tokio::test]
async fn raw_watch_replay_bookmarks_timeout_and_too_old() {
    let fake = FakeKube::start().await;
    fake.set_bookmark_interval(Duration::from_secs(3600));
    let api: Api<Pod> = Api::all(client(&fake));
    let start = fake.resource_version();
    fake.apply(pod("default", "p", &[("v", "1")]));
    fake.apply(pod("default", "p", &[("v", "2")]));
    fake.delete("pods", Some("default"), "p");

    let mut events = api
        .watch(&WatchParams::default(), &start.to_string())
        .await
        .expect("watch from a version")
        .boxed();
    let mut seen = Vec::new();
    for _ in 0..3 {
        let event = timeout(WAIT, events.next())
            .await
            .expect("event in time")
            .expect("stream open")
            .expect("event decodes");
        seen.push(match event {
            WatchEvent::Added(p) => format!("ADDED {}", p.resource_version().unwrap_or_default()),
            WatchEvent::Modified(p) => {
                format!("MODIFIED {}", p.resource_version().unwrap_or_default())
            }
            WatchEvent::Deleted(p) => {
                format!("DELETED {}", p.resource_version().unwrap_or_default())
            }
            other => panic!("unexpected {other:?}"),
        });
    }
    assert_eq!(seen, ["ADDED 1001", "MODIFIED 1002", "DELETED 1003"]);
    drop(events);

    // Bookmarks come after the configured quiet, carrying the current version.
    fake.set_bookmark_interval(Duration::from_millis(100));
    let mut events = api
        .watch(&WatchParams::default(), "0")
        .await
        .expect("watch from 0")
        .boxed();
    match timeout(WAIT, events.next())
        .await
        .expect("bookmark in time")
    {
        Some(Ok(WatchEvent::Bookmark(b))) => {
            assert_eq!(b.metadata.resource_version, "1003");
            assert_eq!(b.types.kind, "Pod");
        }
        other => panic!("expected a bookmark, got {other:?}"),
    }
    drop(events);

    // timeoutSeconds ends the stream cleanly.
    let mut events = api
        .watch(&WatchParams::default().timeout(1).disable_bookmarks(), "0")
        .await
        .expect("watch with timeout")
        .boxed();
    let ended = timeout(WAIT, events.next())
        .await
        .expect("stream ends in time");
    assert!(ended.is_none(), "expected the end, got {ended:?}");

    // A version from before a compaction gets the in-stream 410.
    fake.compact();
    let mut events = api
        .watch(&WatchParams::default(), &start.to_string())
        .await
        .expect("watch starts (the error is in the stream)")
        .boxed();
    match timeout(WAIT, events.next()).await.expect("error in time") {
        Some(Ok(WatchEvent::Error(status))) => {
            assert_eq!(status.code, 410);
            assert_eq!(status.message, "too old resource version: 1000 (1004)");
        }
        other => panic!("expected the 410 event, got {other:?}"),
    }
    assert!(
        timeout(WAIT, events.next())
            .await
            .expect("end in time")
            .is_none()
    );

    // Shutting down cuts open watches.
    let mut events = api
        .watch(&WatchParams::default(), "0")
        .await
        .expect("watch before shutdown")
        .boxed();
    fake.wait_for_watches(1, WAIT).await;
    fake.shutdown();
    loop {
        match timeout(WAIT, events.next())
            .await
            .expect("watch ends after shutdown")
        {
            None => break,
            Some(Err(_)) => {}
            Some(Ok(event)) => panic!("unexpected {event:?}"),
        }
    }
}

/// Sends a bare HTTP/1.1 GET that asks the server to close the connection after the response.
async fn raw_get(fake: &FakeKube, target: &str) -> tokio::net::TcpStream {
    let mut conn = tokio::net::TcpStream::connect(fake.addr())
        .await
        .expect("connect");
    let request = format!("GET {target} HTTP/1.1\r\nHost: fake\r\nConnection: close\r\n\r\n");
    conn.write_all(request.as_bytes()).await.expect("send");
    conn
}

/// Everything until the server closes, split into head and (still chunk-framed) body.
async fn read_response(mut conn: tokio::net::TcpStream) -> (String, String) {
    let mut raw = Vec::new();
    timeout(WAIT, conn.read_to_end(&mut raw))
        .await
        .expect("the server closes in time")
        .expect("read");
    let raw = String::from_utf8(raw).expect("utf-8 response");
    let (head, body) = raw.split_once("\r\n\r\n").expect("header end");
    (head.to_owned(), body.to_owned())
}

/// The bytes on the wire, for what the typed client hides: chunked encoding, one event per
/// line, the exact ERROR line of spec §2.3, and a cut that is not a clean end.
#[tokio::test]
async fn wire_format_of_watch_lines() {
    let fake = FakeKube::start().await;
    fake.apply(pod("default", "p", &[]));
    fake.expire_watches();

    let conn = raw_get(&fake, "/api/v1/pods?&watch=1&resourceVersion=1001").await;
    let (head, body) = read_response(conn).await;
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("transfer-encoding: chunked"),
        "{head}"
    );
    let line = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\
                \"status\":\"Failure\",\"reason\":\"Expired\",\"code\":410,\
                \"message\":\"too old resource version: 1001 (1002)\"}}\n";
    assert!(body.contains(line), "{body}");
    assert!(
        body.ends_with("\r\n0\r\n\r\n"),
        "clean end of the chunked body"
    );

    // A synthetic-ADDED start: one JSON object per line, each newline-terminated; the stream
    // ends cleanly after timeoutSeconds.
    let conn = raw_get(&fake, "/api/v1/pods?watch=true&timeoutSeconds=1").await;
    let (_, body) = read_response(conn).await;
    let event_line = body
        .lines()
        .find(|l| l.starts_with("{\"type\":\"ADDED\""))
        .expect("an ADDED line");
    let event: Value = serde_json::from_str(event_line).expect("line is JSON");
    assert_eq!(event["object"]["metadata"]["name"], "p");
    assert_eq!(event["object"]["kind"], "Pod");
    assert!(
        body.ends_with("\r\n0\r\n\r\n"),
        "clean end after the timeout"
    );

    // drop_watches closes the connection without the last chunk, as a network cut would.
    let conn = raw_get(&fake, "/api/v1/pods?watch=true").await;
    fake.wait_for_watches(1, WAIT).await;
    fake.drop_watches();
    let (_, body) = read_response(conn).await;
    assert!(body.contains("\"ADDED\""), "{body}");
    assert!(!body.ends_with("0\r\n\r\n"), "no clean end: {body:?}");
    fake.wait_for_watches(0, WAIT).await;

    // A client that hangs up on an idle watch (no bookmarks to write) is noticed.
    let conn = raw_get(&fake, "/api/v1/pods?watch=true&resourceVersion=1002").await;
    fake.wait_for_watches(1, WAIT).await;
    drop(conn);
    fake.wait_for_watches(0, WAIT).await;
}

#[tokio::test]
async fn discovery_endpoints_and_other_resources() {
    let fake = FakeKube::start().await;
    let client = client(&fake);
    let version = client.apiserver_version().await.expect("version");
    assert_eq!(version.major, "1");
    let core = client.list_core_api_versions().await.expect("/api");
    assert_eq!(core.versions, ["v1"]);
    let groups = client.list_api_groups().await.expect("/apis");
    assert_eq!(groups.groups[0].name, "discovery.k8s.io");
    let resources = client.list_core_api_resources("v1").await.expect("/api/v1");
    assert!(resources.resources.iter().any(|r| r.name == "pods"));

    // Cluster-scoped and grouped resources, typed and untyped.
    fake.apply_typed(&k8s_openapi::api::core::v1::Node {
        metadata: kube::api::ObjectMeta {
            name: Some("n1".into()),
            ..Default::default()
        },
        ..Default::default()
    });
    fake.apply(json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"namespace": "otel", "name": "svc-abc", "labels": {"kubernetes.io/service-name": "svc"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.0.0.1"]}],
    }));
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(client.clone());
    let node = nodes.get("n1").await.expect("get node");
    assert!(node.metadata.namespace.is_none());
    let slices: Api<k8s_openapi::api::discovery::v1::EndpointSlice> =
        Api::namespaced(client, "otel");
    let list = slices
        .list(&ListParams::default().labels("kubernetes.io/service-name=svc"))
        .await
        .expect("list slices");
    assert_eq!(list.items.len(), 1);
    assert_eq!(
        fake.requests().pop().map(|r| r.path),
        Some("/apis/discovery.k8s.io/v1/namespaces/otel/endpointslices".to_owned())
    );
}
