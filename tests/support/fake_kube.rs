//! An in-process fake Kubernetes API server, real HTTP on `127.0.0.1`, for testing code built on
//! `kube` (client, `watcher`, reflectors) end to end: Config/kubeconfig → hyper → JSON decoding →
//! the watcher's state machine. No real API server can be had on the build machines
//! (k8s-and-helm-testing.md §1), so this models the parts of one that list/watch clients depend
//! on, following §2.3 of that spec:
//!
//! * objects are kind-agnostic JSON kept in memory, for `pods`, `services`, `endpoints`,
//!   `endpointslices`, `ingresses` (namespaced) and `nodes`, `namespaces` (cluster-scoped);
//! * one global resourceVersion counter; every change bumps it, stamps the object and appends an
//!   event to a log that watches replay from;
//! * list with `limit`/`continue` paging; get; watch as newline-delimited JSON over a chunked
//!   response, started from a resourceVersion (replay), from `""`/`"0"` (synthetic ADDED), or with
//!   `sendInitialEvents` (ADDED then the `k8s.io/initial-events-end` bookmark); periodic bookmarks;
//!   `timeoutSeconds`;
//! * label and field selectors on list and watch, including the DELETED/ADDED a watch sees when
//!   an update moves an object out of or into its selector;
//! * failure modes a client must survive: log compaction with the in-stream `ERROR 410` (or,
//!   as etcd without the watch cache answers, HTTP 410 to the watch request), watch
//!   connections cut without a word, connections that are accepted and never answered (a
//!   stalled server, or a proxy that lost its state), injected HTTP errors, a required bearer
//!   token.
//!
//! Not modelled: writes through HTTP (tests change state with [`FakeKube::apply`] and friends),
//! protobuf, TLS, authorisation (RBAC), admission/validation of objects, `deletionTimestamp`
//! and finalizers, watch on a single object's path, consistent snapshots for paged lists (a
//! continued list shows the store as it is now, past the last key served), the watch cache's
//! "too large resource version" wait, and API priority and fairness. Clients reach it over
//! plain `http://` (HTTP/1.1).

use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode, Uri, header};
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::time::Instant;

/// The token [`FakeKube::kubeconfig`] gives its user.
pub const TOKEN: &str = "fake-token";
/// The first resourceVersion handed out is one above this; far from 0 so that "0" (any version)
/// and real versions are never confused.
const FIRST_RESOURCE_VERSION: u64 = 1000;
const DEFAULT_BOOKMARK_INTERVAL: Duration = Duration::from_secs(1);

const CORE: &str = "/api/v1";
const DISCOVERY: &str = "/apis/discovery.k8s.io/v1";
const NETWORKING: &str = "/apis/networking.k8s.io/v1";

/// A resource the fake serves.
#[derive(Debug)]
pub struct ResourceDef {
    pub plural: &'static str,
    pub singular: &'static str,
    pub kind: &'static str,
    pub list_kind: &'static str,
    pub api_version: &'static str,
    /// URL prefix of the group version, e.g. `/api/v1`.
    pub prefix: &'static str,
    pub namespaced: bool,
    /// Field selector labels beyond `metadata.name` and `metadata.namespace`, as the real API
    /// server registers them for this resource (trimmed to what discovery uses).
    pub fields: &'static [&'static str],
}

pub const RESOURCES: &[ResourceDef] = &[
    ResourceDef {
        plural: "pods",
        singular: "pod",
        kind: "Pod",
        list_kind: "PodList",
        api_version: "v1",
        prefix: CORE,
        namespaced: true,
        fields: &["spec.nodeName", "status.phase"],
    },
    ResourceDef {
        plural: "services",
        singular: "service",
        kind: "Service",
        list_kind: "ServiceList",
        api_version: "v1",
        prefix: CORE,
        namespaced: true,
        fields: &[],
    },
    ResourceDef {
        plural: "endpoints",
        singular: "endpoints",
        kind: "Endpoints",
        list_kind: "EndpointsList",
        api_version: "v1",
        prefix: CORE,
        namespaced: true,
        fields: &[],
    },
    ResourceDef {
        plural: "nodes",
        singular: "node",
        kind: "Node",
        list_kind: "NodeList",
        api_version: "v1",
        prefix: CORE,
        namespaced: false,
        fields: &[],
    },
    ResourceDef {
        plural: "namespaces",
        singular: "namespace",
        kind: "Namespace",
        list_kind: "NamespaceList",
        api_version: "v1",
        prefix: CORE,
        namespaced: false,
        fields: &["status.phase"],
    },
    ResourceDef {
        plural: "endpointslices",
        singular: "endpointslice",
        kind: "EndpointSlice",
        list_kind: "EndpointSliceList",
        api_version: "discovery.k8s.io/v1",
        prefix: DISCOVERY,
        namespaced: true,
        fields: &[],
    },
    // Read one at a time by `remote.kubernetes.*` (GET of one object).
    ResourceDef {
        plural: "secrets",
        singular: "secret",
        kind: "Secret",
        list_kind: "SecretList",
        api_version: "v1",
        prefix: CORE,
        namespaced: true,
        fields: &[],
    },
    ResourceDef {
        plural: "configmaps",
        singular: "configmap",
        kind: "ConfigMap",
        list_kind: "ConfigMapList",
        api_version: "v1",
        prefix: CORE,
        namespaced: true,
        fields: &[],
    },
    ResourceDef {
        plural: "ingresses",
        singular: "ingress",
        kind: "Ingress",
        list_kind: "IngressList",
        api_version: "networking.k8s.io/v1",
        prefix: NETWORKING,
        namespaced: true,
        fields: &[],
    },
];

fn resource_by_plural(prefix: &str, plural: &str) -> Option<&'static ResourceDef> {
    RESOURCES
        .iter()
        .find(|r| r.prefix == prefix && r.plural == plural)
}

fn resource_named(plural: &str) -> &'static ResourceDef {
    RESOURCES
        .iter()
        .find(|r| r.plural == plural)
        .unwrap_or_else(|| panic!("fake kube serves no resource {plural:?}"))
}

/// The namespace part of a store key: `""` for cluster-scoped resources.
fn store_namespace(def: &ResourceDef, namespace: Option<&str>) -> String {
    match (def.namespaced, namespace) {
        (true, Some(ns)) => ns.to_owned(),
        (true, None) => panic!("{} is namespaced: name a namespace", def.plural),
        (false, _) => String::new(),
    }
}

fn resource_by_kind(kind: &str) -> &'static ResourceDef {
    RESOURCES
        .iter()
        .find(|r| r.kind == kind)
        .unwrap_or_else(|| panic!("fake kube serves no kind {kind:?}"))
}

/// One request as the fake received it.
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// Decoded query pairs in order, empty pairs (kube sends `?&…`) dropped.
    pub query: Vec<(String, String)>,
    /// Every header, names lower-case.
    pub headers: Vec<(String, String)>,
}

impl RecordedRequest {
    pub fn param(&self, key: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn is_watch(&self) -> bool {
        self.param("watch").and_then(parse_go_bool).unwrap_or(false)
    }

    /// A GET of a collection without `watch`.
    pub fn is_list(&self, path: &str) -> bool {
        self.method == "GET" && self.path == path && !self.is_watch()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

/// One entry of the event log.
struct Change {
    rv: u64,
    resource: &'static str,
    kind: ChangeKind,
    /// The object after the change; for a delete, the last state stamped with the delete's RV.
    object: Arc<Value>,
    /// The object before a modification; decides whether a selective watch sees MODIFIED,
    /// ADDED or DELETED.
    previous: Option<Arc<Value>>,
}

/// What every open watch reacts to. Changed only with the store lock held, so a watch reading
/// it under the same lock sees it consistent with the store.
#[derive(Clone, Copy, Debug, Default)]
struct Signal {
    expire_gen: u64,
    drop_gen: u64,
    /// Open watches go silent (see [`FakeKube::stall_watches`]).
    watches_stalled: bool,
    shutdown: bool,
}

struct Store {
    rv: u64,
    /// The oldest resourceVersion a watch may still start from; anything older is "too old".
    compacted: u64,
    objects: BTreeMap<&'static str, BTreeMap<(String, String), Arc<Value>>>,
    /// Changes with `rv` above `compacted`, ascending.
    log: Vec<Change>,
    failures: VecDeque<u16>,
    /// New watch (list) requests are accepted and never answered.
    stall_watches: bool,
    stall_lists: bool,
    /// A watch from a compacted version is refused with HTTP 410 instead of the in-stream
    /// `ERROR` line.
    expired_as_status: bool,
    bookmark_interval: Duration,
    required_token: Option<String>,
    next_uid: u64,
}

struct Shared {
    store: Mutex<Store>,
    signal: watch::Sender<Signal>,
    requests: Mutex<Vec<RecordedRequest>>,
    open_watches: AtomicUsize,
    hung_requests: AtomicUsize,
    addr: SocketAddr,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A test that panicked while holding the lock must not turn every later call into a
    // second, misleading panic.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    fn store(&self) -> MutexGuard<'_, Store> {
        lock(&self.store)
    }

    /// Wakes every watch, after `f` changes the signal (a no-op `f` just means "the store
    /// changed"). Taking the store guard proves the lock is held.
    fn signal(&self, _store: &Store, f: impl FnOnce(&mut Signal)) {
        self.signal.send_modify(f);
    }
}

/// The running fake. Dropping it stops the server and ends every watch.
pub struct FakeKube {
    shared: Arc<Shared>,
}

impl FakeKube {
    pub async fn start() -> FakeKube {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind fake kube listener");
        let addr = listener.local_addr().expect("fake kube local addr");
        let (signal, _) = watch::channel(Signal::default());
        let shared = Arc::new(Shared {
            store: Mutex::new(Store {
                rv: FIRST_RESOURCE_VERSION,
                compacted: 0,
                objects: BTreeMap::new(),
                log: Vec::new(),
                failures: VecDeque::new(),
                stall_watches: false,
                stall_lists: false,
                expired_as_status: false,
                bookmark_interval: DEFAULT_BOOKMARK_INTERVAL,
                required_token: None,
                next_uid: 1,
            }),
            signal,
            requests: Mutex::new(Vec::new()),
            open_watches: AtomicUsize::new(0),
            hung_requests: AtomicUsize::new(0),
            addr,
        });
        let mut stop = shared.signal.subscribe();
        let app = Router::new().fallback(handle).with_state(shared.clone());
        tokio::spawn(async move {
            let stopped = async move {
                // An error means the sender is gone, which also means stop.
                let _ = stop.wait_for(|s| s.shutdown).await;
            };
            // Graceful: idle keep-alive connections close, and watches end on the same signal.
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(stopped)
                .await;
        });
        FakeKube { shared }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.shared.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.shared.addr
    }

    /// Stops accepting connections, cuts every open watch and closes idle connections.
    pub fn shutdown(&self) {
        let shared = &self.shared;
        let store = shared.store();
        shared.signal(&store, |s| s.shutdown = true);
    }

    /// The current (latest) resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.shared.store().rv
    }

    /// Creates or replaces an object; the resource comes from its `kind`. A namespaced object
    /// without a namespace lands in `default`. Returns the stored object (with its new
    /// resourceVersion, uid and creationTimestamp).
    pub fn apply(&self, mut obj: Value) -> Value {
        let kind = obj["kind"]
            .as_str()
            .unwrap_or_else(|| panic!("object without kind: {obj}"))
            .to_owned();
        let def = resource_by_kind(&kind);
        let name = obj["metadata"]["name"]
            .as_str()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| panic!("object without metadata.name: {obj}"))
            .to_owned();
        if obj.get("apiVersion").and_then(Value::as_str).is_none() {
            obj["apiVersion"] = json!(def.api_version);
        }
        let namespace = if def.namespaced {
            let ns = obj["metadata"]["namespace"]
                .as_str()
                .filter(|n| !n.is_empty())
                .unwrap_or("default")
                .to_owned();
            obj["metadata"]["namespace"] = json!(ns);
            ns
        } else {
            if let Some(meta) = obj["metadata"].as_object_mut() {
                meta.remove("namespace");
            }
            String::new()
        };

        let shared = &self.shared;
        let mut store = shared.store();
        let key = (namespace, name);
        let previous = store
            .objects
            .get(def.plural)
            .and_then(|m| m.get(&key))
            .cloned();
        store.rv += 1;
        let rv = store.rv;
        let meta = &mut obj["metadata"];
        meta["resourceVersion"] = json!(rv.to_string());
        // Identity survives a replace, as it does for an update on a real server.
        for field in ["uid", "creationTimestamp"] {
            if meta.get(field).and_then(Value::as_str).is_none()
                && let Some(old) = previous.as_ref().and_then(|p| p["metadata"].get(field))
            {
                meta[field] = old.clone();
            }
        }
        if meta.get("uid").and_then(Value::as_str).is_none() {
            meta["uid"] = json!(format!("00000000-0000-4000-8000-{:012x}", store.next_uid));
            store.next_uid += 1;
        }
        if meta
            .get("creationTimestamp")
            .and_then(Value::as_str)
            .is_none()
        {
            meta["creationTimestamp"] = json!(rfc3339_now());
        }
        let object = Arc::new(obj);
        store
            .objects
            .entry(def.plural)
            .or_default()
            .insert(key, object.clone());
        let kind = if previous.is_some() {
            ChangeKind::Modified
        } else {
            ChangeKind::Added
        };
        store.log.push(Change {
            rv,
            resource: def.plural,
            kind,
            object: object.clone(),
            previous,
        });
        shared.signal(&store, |_| {});
        (*object).clone()
    }

    /// [`apply`](Self::apply) for a k8s-openapi object; `kind`/`apiVersion` come from the type
    /// when the serialised form lacks them.
    pub fn apply_typed<T>(&self, obj: &T) -> Value
    where
        T: k8s_openapi::Resource + serde::Serialize,
    {
        let mut value = serde_json::to_value(obj).expect("serialise typed object");
        if value.get("kind").and_then(Value::as_str).is_none() {
            value["kind"] = json!(T::KIND);
        }
        if value.get("apiVersion").and_then(Value::as_str).is_none() {
            value["apiVersion"] = json!(T::API_VERSION);
        }
        self.apply(value)
    }

    /// Deletes an object, returning its last state (stamped with the delete's resourceVersion,
    /// as the DELETED event carries it), or `None` if there was none. The namespace is ignored
    /// for cluster-scoped resources and required for namespaced ones (a panic otherwise: a
    /// silent `None` would hide the test bug).
    pub fn delete(&self, resource: &str, namespace: Option<&str>, name: &str) -> Option<Value> {
        let def = resource_named(resource);
        let ns = store_namespace(def, namespace);
        let shared = &self.shared;
        let mut store = shared.store();
        let old = store
            .objects
            .get_mut(def.plural)?
            .remove(&(ns, name.to_owned()))?;
        store.rv += 1;
        let rv = store.rv;
        let mut last = (*old).clone();
        last["metadata"]["resourceVersion"] = json!(rv.to_string());
        let object = Arc::new(last);
        store.log.push(Change {
            rv,
            resource: def.plural,
            kind: ChangeKind::Deleted,
            object: object.clone(),
            previous: Some(old),
        });
        shared.signal(&store, |_| {});
        Some((*object).clone())
    }

    /// The stored object, if any; namespace as for [`delete`](Self::delete).
    pub fn get(&self, resource: &str, namespace: Option<&str>, name: &str) -> Option<Value> {
        let def = resource_named(resource);
        let key = (store_namespace(def, namespace), name.to_owned());
        let store = self.shared.store();
        store
            .objects
            .get(def.plural)?
            .get(&key)
            .map(|o| (**o).clone())
    }

    /// Forgets the event log: from now on a watch or a list (with `resourceVersionMatch=Exact`,
    /// or a `continue` token) naming any earlier resourceVersion is answered "too old" (410
    /// Expired). The current version moves one up, so a client that saw everything still holds
    /// an expired version, as after an etcd compaction. Open watches are left alone.
    pub fn compact(&self) {
        let shared = &self.shared;
        let mut store = shared.store();
        Self::compact_locked(&mut store);
        shared.signal(&store, |_| {});
    }

    fn compact_locked(store: &mut Store) {
        store.rv += 1;
        store.compacted = store.rv;
        store.log.clear();
    }

    /// [`compact`](Self::compact), then ends every open watch with the in-stream
    /// `ERROR` 410 Expired line, as a real API server does when its watch cache moves past a
    /// watcher.
    pub fn expire_watches(&self) {
        let shared = &self.shared;
        let mut store = shared.store();
        Self::compact_locked(&mut store);
        shared.signal(&store, |s| s.expire_gen += 1);
    }

    /// Cuts every open watch connection mid-stream, with no ERROR line and no clean end of the
    /// chunked body: what a client sees when a load balancer or the network drops it.
    pub fn drop_watches(&self) {
        let shared = &self.shared;
        let store = shared.store();
        shared.signal(&store, |s| s.drop_gen += 1);
    }

    /// Makes the next `times` requests (of any kind, watches included) fail with `status` and a
    /// `Status` body. 429 carries `Retry-After: 1` like the real server's; note that kube's
    /// default client retries 429, 503 and 504 by itself.
    pub fn fail_next(&self, status: u16, times: usize) {
        let mut store = self.shared.store();
        store.failures.extend(std::iter::repeat_n(status, times));
    }

    /// Makes watches stop answering, as a server that hangs or a proxy that lost its state
    /// does: every open watch goes silent (no events, no bookmarks, no end at its
    /// `timeoutSeconds`) and stays so for good, and every new watch request is accepted and
    /// never answered (until shutdown). Only the client's own timeout, or
    /// [`drop_watches`](Self::drop_watches), gets it out. [`unstall`](Self::unstall) lets new
    /// requests through again.
    pub fn stall_watches(&self) {
        let shared = &self.shared;
        let mut store = shared.store();
        store.stall_watches = true;
        shared.signal(&store, |s| s.watches_stalled = true);
    }

    /// New list requests (not watches) are accepted and never answered, until
    /// [`unstall`](Self::unstall).
    pub fn stall_lists(&self) {
        self.shared.store().stall_lists = true;
    }

    /// New requests are answered again. Requests and watches already stalled stay silent.
    pub fn unstall(&self) {
        let shared = &self.shared;
        let mut store = shared.store();
        store.stall_watches = false;
        store.stall_lists = false;
        shared.signal(&store, |s| s.watches_stalled = false);
    }

    /// Requests being held unanswered by a stall.
    pub fn hung_requests(&self) -> usize {
        self.shared.hung_requests.load(Ordering::SeqCst)
    }

    /// With `true`, a watch from a compacted resourceVersion is refused with HTTP 410 (a
    /// `Status` body, reason `Expired`), as etcd without the watch cache answers, instead of
    /// the watch cache's 200 with an in-stream `ERROR` 410.
    pub fn set_expired_as_status(&self, on: bool) {
        self.shared.store().expired_as_status = on;
    }

    /// Interval of quiet after which a watch with `allowWatchBookmarks=true` gets a BOOKMARK.
    /// Applies to watches started afterwards.
    pub fn set_bookmark_interval(&self, interval: Duration) {
        self.shared.store().bookmark_interval = interval;
    }

    /// Requires `Authorization: Bearer <token>` on every request (401 otherwise); `None` turns
    /// the check off (the default).
    pub fn set_required_token(&self, token: Option<&str>) {
        self.shared.store().required_token = token.map(str::to_owned);
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    pub fn clear_requests(&self) {
        lock(&self.shared.requests).clear();
    }

    /// Watches currently streaming. A watch counts until its response ends or its client hangs
    /// up (hyper notices the closed connection even on an idle watch).
    pub fn watch_count(&self) -> usize {
        self.shared.open_watches.load(Ordering::SeqCst)
    }

    /// Waits until exactly `n` watches are open; panics after `timeout`.
    pub async fn wait_for_watches(&self, n: usize, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while self.watch_count() != n {
            assert!(
                Instant::now() < deadline,
                "expected {n} open watches, have {} after {timeout:?}",
                self.watch_count()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Writes a kubeconfig pointing at this server (token user [`TOKEN`], context namespace
    /// `default`, set as current context) into `dir` and returns its path.
    pub fn kubeconfig(&self, dir: &Path) -> PathBuf {
        let path = dir.join("kubeconfig");
        let text = format!(
            "apiVersion: v1\n\
             kind: Config\n\
             clusters:\n\
             - name: fake\n  cluster:\n    server: {url}\n\
             users:\n\
             - name: fake-user\n  user:\n    token: {TOKEN}\n\
             contexts:\n\
             - name: fake\n  context:\n    cluster: fake\n    user: fake-user\n    namespace: default\n\
             current-context: fake\n\
             preferences: {{}}\n",
            url = self.url()
        );
        std::fs::write(&path, text).expect("write kubeconfig");
        path
    }
}

impl Drop for FakeKube {
    fn drop(&mut self) {
        self.shutdown();
    }
}

// ---------------------------------------------------------------------------------------------
// HTTP

fn json_response(status: StatusCode, body: &Value) -> Response {
    let bytes = serde_json::to_vec(body).expect("serialise response");
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(bytes))
        .expect("build response")
}

fn reason_for(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        409 => "Conflict",
        410 => "Expired",
        422 => "Invalid",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "Unknown",
    }
}

fn status_value(code: u16, reason: &str, message: &str) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    })
}

fn status_response(code: u16, message: &str) -> Response {
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    json_response(status, &status_value(code, reason_for(code), message))
}

/// A request refused with a `Status` body.
#[derive(Debug)]
struct Failure {
    code: u16,
    message: String,
}

impl Failure {
    fn new(code: u16, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
        }
    }

    fn into_response(self) -> Response {
        status_response(self.code, &self.message)
    }
}

/// Go's `strconv.ParseBool`, which the API server uses for `watch` and friends.
fn parse_go_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn parse_query(query: Option<&str>) -> Vec<(String, String)> {
    query
        .unwrap_or("")
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| match pair.split_once('=') {
            Some((k, v)) => (percent_decode(k), percent_decode(v)),
            None => (percent_decode(pair), String::new()),
        })
        .collect()
}

struct Query(Vec<(String, String)>);

impl Query {
    fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    fn flag(&self, key: &str) -> Result<bool, Failure> {
        match self.get(key) {
            None | Some("") => Ok(false),
            Some(v) => parse_go_bool(v)
                .ok_or_else(|| Failure::new(400, format!("invalid value for {key}: {v:?}"))),
        }
    }

    fn number(&self, key: &str) -> Result<Option<u64>, Failure> {
        match self.get(key) {
            None | Some("") => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| Failure::new(400, format!("invalid value for {key}: {v:?}"))),
        }
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let query = parse_query(uri.query());
    let path = uri.path().to_owned();
    lock(&shared.requests).push(RecordedRequest {
        method: method.to_string(),
        path: path.clone(),
        query: query.clone(),
        headers: headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
    });

    {
        let mut store = shared.store();
        if let Some(required) = &store.required_token {
            let presented = headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "));
            if presented != Some(required.as_str()) {
                return status_response(401, "Unauthorized");
            }
        }
        if let Some(code) = store.failures.pop_front() {
            let mut response = status_response(code, "injected failure (fake kube fail_next)");
            if code == 429 {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, http::HeaderValue::from_static("1"));
            }
            return response;
        }
    }

    if method != Method::GET {
        return status_response(
            405,
            "the server does not allow this method on the requested resource",
        );
    }
    let query = Query(query);
    if let Some(Route::Collection(..)) = route(&path) {
        let watch = query.flag("watch").unwrap_or(false);
        let stalled = {
            let store = shared.store();
            if watch {
                store.stall_watches
            } else {
                store.stall_lists
            }
        };
        if stalled {
            return hang(&shared).await;
        }
    }
    match route(&path) {
        Some(Route::Version) => json_response(StatusCode::OK, &version_info()),
        Some(Route::CoreVersions) => json_response(
            StatusCode::OK,
            &json!({
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [
                    {"clientCIDR": "0.0.0.0/0", "serverAddress": shared.addr.to_string()}
                ],
            }),
        ),
        Some(Route::Groups) => json_response(StatusCode::OK, &api_groups()),
        Some(Route::Resources(prefix)) => json_response(StatusCode::OK, &api_resources(prefix)),
        Some(Route::Collection(def, ns)) => {
            let watch = match query.flag("watch") {
                Ok(w) => w,
                Err(failure) => return failure.into_response(),
            };
            let result = if watch {
                start_watch(&shared, def, ns, &query)
            } else {
                list(&shared, def, ns.as_deref(), &query)
            };
            result.unwrap_or_else(Failure::into_response)
        }
        Some(Route::Object(def, ns, name)) => get_object(&shared, def, &ns, &name),
        None => status_response(404, "the server could not find the requested resource"),
    }
}

/// Holds a request unanswered until the server shuts down: a connection accepted by a server
/// that never answers it.
async fn hang(shared: &Arc<Shared>) -> Response {
    struct Hung<'a>(&'a AtomicUsize);
    impl Drop for Hung<'_> {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }
    shared.hung_requests.fetch_add(1, Ordering::SeqCst);
    let _hung = Hung(&shared.hung_requests);
    let mut signal = shared.signal.subscribe();
    // An error means the sender is gone, which also means the server stopped.
    let _ = signal.wait_for(|s| s.shutdown).await;
    status_response(503, "the fake kube is shutting down")
}

enum Route {
    Version,
    CoreVersions,
    Groups,
    Resources(&'static str),
    /// All namespaces when the namespace is `None`.
    Collection(&'static ResourceDef, Option<String>),
    Object(&'static ResourceDef, String, String),
}

fn route(path: &str) -> Option<Route> {
    let path = path.trim_end_matches('/');
    match path {
        "/version" => return Some(Route::Version),
        "/api" => return Some(Route::CoreVersions),
        "/apis" => return Some(Route::Groups),
        _ => {}
    }
    let (prefix, rest) = [CORE, DISCOVERY, NETWORKING]
        .into_iter()
        .find_map(|p| path.strip_prefix(p).map(|rest| (p, rest)))?;
    if !rest.is_empty() && !rest.starts_with('/') {
        return None;
    }
    let segs: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    let namespaced = |plural: &str| resource_by_plural(prefix, plural).filter(|d| d.namespaced);
    match segs.as_slice() {
        [] => Some(Route::Resources(prefix)),
        [plural] => Some(Route::Collection(resource_by_plural(prefix, plural)?, None)),
        ["namespaces", ns, plural] => Some(Route::Collection(
            namespaced(plural)?,
            Some((*ns).to_owned()),
        )),
        ["namespaces", ns, plural, name] => Some(Route::Object(
            namespaced(plural)?,
            (*ns).to_owned(),
            (*name).to_owned(),
        )),
        [plural, name] => {
            let def = resource_by_plural(prefix, plural).filter(|d| !d.namespaced)?;
            Some(Route::Object(def, String::new(), (*name).to_owned()))
        }
        _ => None,
    }
}

fn version_info() -> Value {
    json!({
        "major": "1",
        "minor": "37",
        "gitVersion": "v1.37.0-fake",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.26.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

fn api_groups() -> Value {
    let group = |name: &str| {
        let version = json!({"groupVersion": format!("{name}/v1"), "version": "v1"});
        json!({"name": name, "versions": [version], "preferredVersion": version})
    };
    json!({
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [group("discovery.k8s.io"), group("networking.k8s.io")],
    })
}

fn api_resources(prefix: &str) -> Value {
    let group_version = match prefix {
        CORE => "v1",
        NETWORKING => "networking.k8s.io/v1",
        _ => "discovery.k8s.io/v1",
    };
    let resources: Vec<Value> = RESOURCES
        .iter()
        .filter(|r| r.prefix == prefix)
        .map(|r| {
            json!({
                "name": r.plural,
                "singularName": r.singular,
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": ["get", "list", "watch"],
            })
        })
        .collect();
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    })
}

fn get_object(shared: &Shared, def: &'static ResourceDef, ns: &str, name: &str) -> Response {
    let store = shared.store();
    let found = store
        .objects
        .get(def.plural)
        .and_then(|m| m.get(&(ns.to_owned(), name.to_owned())))
        .cloned();
    drop(store);
    match found {
        Some(obj) => json_response(StatusCode::OK, &obj),
        None => {
            let mut body = status_value(
                404,
                "NotFound",
                &format!("{} {name:?} not found", def.plural),
            );
            body["details"] = json!({"name": name, "kind": def.plural});
            json_response(StatusCode::NOT_FOUND, &body)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Selectors

#[derive(Debug, Clone, PartialEq)]
enum LabelRequirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed `labelSelector`: a conjunction of requirements; empty matches everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector(Vec<LabelRequirement>);

fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/')
}

impl LabelSelector {
    pub fn parse(s: &str) -> Result<LabelSelector, String> {
        let mut terms = Vec::new();
        let mut depth = 0usize;
        let mut start = 0;
        for (i, c) in s.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => depth = depth.saturating_sub(1),
                ',' if depth == 0 => {
                    terms.push(&s[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        terms.push(&s[start..]);
        if terms.len() == 1 && terms[0].trim().is_empty() {
            return Ok(LabelSelector::default());
        }
        terms
            .into_iter()
            .map(Self::requirement)
            .collect::<Result<_, _>>()
            .map(LabelSelector)
    }

    fn requirement(term: &str) -> Result<LabelRequirement, String> {
        let term = term.trim();
        let bad = |why: &str| Err(format!("unable to parse requirement: {term:?}: {why}"));
        if let Some(key) = term.strip_prefix('!') {
            let key = key.trim();
            if key.is_empty() || !key.chars().all(is_key_char) {
                return bad("invalid label key");
            }
            return Ok(LabelRequirement::NotExists(key.to_owned()));
        }
        let key_end = term.find(|c: char| !is_key_char(c)).unwrap_or(term.len());
        let key = term[..key_end].to_owned();
        if key.is_empty() {
            return bad("missing label key");
        }
        let rest = term[key_end..].trim_start();
        let value = |v: &str| -> Result<String, String> {
            let v = v.trim();
            if v.chars().all(is_key_char) {
                Ok(v.to_owned())
            } else {
                Err(format!(
                    "unable to parse requirement: {term:?}: invalid label value {v:?}"
                ))
            }
        };
        let set = |v: &str| -> Result<Vec<String>, String> {
            let inner = v
                .trim()
                .strip_prefix('(')
                .and_then(|v| v.strip_suffix(')'))
                .ok_or_else(|| {
                    format!("unable to parse requirement: {term:?}: expected (values)")
                })?;
            inner.split(',').map(value).collect()
        };
        if rest.is_empty() {
            Ok(LabelRequirement::Exists(key))
        } else if let Some(v) = rest.strip_prefix("!=") {
            Ok(LabelRequirement::NotEquals(key, value(v)?))
        } else if let Some(v) = rest.strip_prefix("==") {
            Ok(LabelRequirement::Equals(key, value(v)?))
        } else if let Some(v) = rest.strip_prefix('=') {
            Ok(LabelRequirement::Equals(key, value(v)?))
        } else if let Some(v) = rest.strip_prefix("notin") {
            Ok(LabelRequirement::NotIn(key, set(v)?))
        } else if let Some(v) = rest.strip_prefix("in") {
            Ok(LabelRequirement::In(key, set(v)?))
        } else {
            bad("unknown operator")
        }
    }

    pub fn matches(&self, labels: Option<&serde_json::Map<String, Value>>) -> bool {
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.0.iter().all(|req| match req {
            LabelRequirement::Equals(k, v) => get(k) == Some(v.as_str()),
            LabelRequirement::NotEquals(k, v) => get(k) != Some(v.as_str()),
            LabelRequirement::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            LabelRequirement::NotIn(k, vs) => !get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            LabelRequirement::Exists(k) => get(k).is_some(),
            LabelRequirement::NotExists(k) => get(k).is_none(),
        })
    }
}

/// A parsed `fieldSelector`: `field=value`, `field==value`, `field!=value`, comma-joined.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    /// Fails with the real API server's message for a field the resource does not index.
    pub fn parse(s: &str, def: &ResourceDef) -> Result<FieldSelector, String> {
        let mut terms = Vec::new();
        for term in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (field, equal, value) = if let Some((f, v)) = term.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = term.split_once("==") {
                (f, true, v)
            } else if let Some((f, v)) = term.split_once('=') {
                (f, true, v)
            } else {
                return Err(format!(
                    "invalid selector: '{s}'; can't understand '{term}'"
                ));
            };
            let field = field.trim();
            let supported = matches!(field, "metadata.name" | "metadata.namespace")
                || def.fields.contains(&field);
            if !supported {
                return Err(format!("field label not supported: {field}"));
            }
            terms.push((field.to_owned(), equal, value.trim().to_owned()));
        }
        Ok(FieldSelector(terms))
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.0.iter().all(|(field, equal, value)| {
            let actual = field
                .split('.')
                .try_fold(obj, |v, part| v.get(part))
                .and_then(Value::as_str)
                .unwrap_or("");
            (actual == value) == *equal
        })
    }
}

/// Which objects of a resource a list or watch is about.
struct Filter {
    namespace: Option<String>,
    labels: LabelSelector,
    fields: FieldSelector,
}

impl Filter {
    fn from_query(
        def: &ResourceDef,
        namespace: Option<String>,
        q: &Query,
    ) -> Result<Filter, Failure> {
        let labels = LabelSelector::parse(q.get("labelSelector").unwrap_or(""))
            .map_err(|e| Failure::new(400, e))?;
        let fields = FieldSelector::parse(q.get("fieldSelector").unwrap_or(""), def)
            .map_err(|e| Failure::new(400, e))?;
        Ok(Filter {
            namespace,
            labels,
            fields,
        })
    }

    fn matches(&self, obj: &Value) -> bool {
        let meta = &obj["metadata"];
        if let Some(ns) = &self.namespace
            && meta["namespace"].as_str() != Some(ns.as_str())
        {
            return false;
        }
        self.labels.matches(meta["labels"].as_object()) && self.fields.matches(obj)
    }

    fn has_selectors(&self) -> bool {
        !self.labels.0.is_empty() || !self.fields.0.is_empty()
    }
}

fn matching<'a>(
    store: &'a Store,
    def: &ResourceDef,
    filter: &'a Filter,
) -> impl Iterator<Item = (&'a (String, String), &'a Arc<Value>)> + 'a {
    store
        .objects
        .get(def.plural)
        .into_iter()
        .flat_map(|m| m.iter())
        .filter(move |(_, o)| filter.matches(o))
}

// ---------------------------------------------------------------------------------------------
// List

fn too_old(requested: u64, oldest: u64) -> String {
    format!("too old resource version: {requested} ({oldest})")
}

/// The token names the snapshot version and the last key served; the next page starts after
/// that key, so objects added or removed meanwhile shift nothing.
fn encode_continue(rv: u64, key: &(String, String)) -> String {
    format!("{rv}:{}/{}", key.0, key.1)
}

fn decode_continue(token: &str) -> Option<(u64, (String, String))> {
    let (rv, key) = token.split_once(':')?;
    let (ns, name) = key.split_once('/')?;
    Some((rv.parse().ok()?, (ns.to_owned(), name.to_owned())))
}

fn list(
    shared: &Shared,
    def: &'static ResourceDef,
    namespace: Option<&str>,
    q: &Query,
) -> Result<Response, Failure> {
    let filter = Filter::from_query(def, namespace.map(str::to_owned), q)?;
    let limit = q.number("limit")?.filter(|&l| l > 0);
    let store = shared.store();
    let (snapshot, after) = match q.get("continue").filter(|c| !c.is_empty()) {
        Some(token) => {
            let (rv, key) = decode_continue(token)
                .ok_or_else(|| Failure::new(400, "continue key is not valid"))?;
            if rv < store.compacted {
                return Err(Failure::new(
                    410,
                    "The provided continue parameter is too old to display a consistent list \
                     result. You can start a new list without the continue parameter.",
                ));
            }
            (rv, Some(key))
        }
        None => (store.rv, None),
    };
    if q.get("resourceVersionMatch") == Some("Exact")
        && let Some(rv) = q.number("resourceVersion")?
        && rv > 0
        && rv < store.compacted
    {
        return Err(Failure::new(410, too_old(rv, store.compacted)));
    }
    let mut remaining = matching(&store, def, &filter)
        .filter(|(k, _)| after.as_ref().is_none_or(|a| *k > a))
        .peekable();
    let mut items = Vec::new();
    let mut last_key = None;
    for (key, obj) in remaining.by_ref() {
        // A real server's list items carry no kind/apiVersion: the list says it once.
        let mut item = (**obj).clone();
        if let Some(map) = item.as_object_mut() {
            map.remove("kind");
            map.remove("apiVersion");
        }
        items.push(item);
        last_key = Some(key.clone());
        if limit.is_some_and(|l| items.len() as u64 >= l) {
            break;
        }
    }
    let mut metadata = json!({"resourceVersion": snapshot.to_string()});
    if let Some(key) = last_key.filter(|_| remaining.peek().is_some()) {
        metadata["continue"] = json!(encode_continue(snapshot, &key));
        if !filter.has_selectors() {
            metadata["remainingItemCount"] = json!(remaining.count());
        }
    }
    Ok(json_response(
        StatusCode::OK,
        &json!({
            "kind": def.list_kind,
            "apiVersion": def.api_version,
            "metadata": metadata,
            "items": items,
        }),
    ))
}

// ---------------------------------------------------------------------------------------------
// Watch

fn event_line(kind: &str, object: &Value) -> Bytes {
    let object = serde_json::to_string(object).expect("serialise watch object");
    Bytes::from(format!("{{\"type\":\"{kind}\",\"object\":{object}}}\n"))
}

fn expired_line(requested: u64, oldest: u64) -> Bytes {
    // Written out by hand so the line is byte for byte the one in the spec (§2.3).
    Bytes::from(format!(
        "{{\"type\":\"ERROR\",\"object\":{{\"kind\":\"Status\",\"apiVersion\":\"v1\",\
         \"status\":\"Failure\",\"reason\":\"Expired\",\"code\":410,\"message\":\"{}\"}}}}\n",
        too_old(requested, oldest)
    ))
}

fn bookmark_line(def: &ResourceDef, rv: u64, initial_end: bool) -> Bytes {
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    if initial_end {
        metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    event_line(
        "BOOKMARK",
        &json!({"kind": def.kind, "apiVersion": def.api_version, "metadata": metadata}),
    )
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Live,
    /// Send what is pending, then end the body cleanly.
    Closing,
    /// End the body with an error, so hyper cuts the connection without the last chunk.
    Abort,
    /// Send nothing more, ever: a dead connection. Only a drop or shutdown ends it.
    Stalled,
    Done,
}

struct WatchGuard(Arc<Shared>);

impl Drop for WatchGuard {
    fn drop(&mut self) {
        self.0.open_watches.fetch_sub(1, Ordering::SeqCst);
    }
}

struct WatchStream {
    guard: WatchGuard,
    signal: watch::Receiver<Signal>,
    expire_gen: u64,
    drop_gen: u64,
    def: &'static ResourceDef,
    filter: Filter,
    /// Every change up to here has been considered for this watch.
    cursor: u64,
    pending: VecDeque<Bytes>,
    phase: Phase,
    bookmarks: bool,
    bookmark_interval: Duration,
    next_bookmark: Instant,
    deadline: Option<Instant>,
}

fn start_watch(
    shared: &Arc<Shared>,
    def: &'static ResourceDef,
    namespace: Option<String>,
    q: &Query,
) -> Result<Response, Failure> {
    let filter = Filter::from_query(def, namespace, q)?;
    let bookmarks = q.flag("allowWatchBookmarks")?;
    let initial_events = q.flag("sendInitialEvents")?;
    let timeout = q.number("timeoutSeconds")?;
    let from = match q.get("resourceVersion") {
        None | Some("") => None,
        Some(v) => Some(
            v.parse::<u64>()
                .map_err(|_| Failure::new(400, format!("invalid resource version: {v:?}")))?,
        ),
    };
    if initial_events && q.get("resourceVersionMatch") != Some("NotOlderThan") {
        return Err(Failure::new(
            422,
            "sendInitialEvents is forbidden for watch unless resourceVersionMatch is set to \
             NotOlderThan",
        ));
    }

    let store = shared.store();
    let mut signal = shared.signal.subscribe();
    let seen = *signal.borrow_and_update();
    let mut pending = VecDeque::new();
    let mut phase = Phase::Live;
    let cursor = match from {
        _ if initial_events => {
            pending.extend(matching(&store, def, &filter).map(|(_, o)| event_line("ADDED", o)));
            pending.push_back(bookmark_line(def, store.rv, true));
            store.rv
        }
        None | Some(0) => {
            pending.extend(matching(&store, def, &filter).map(|(_, o)| event_line("ADDED", o)));
            store.rv
        }
        Some(rv) if rv < store.compacted && store.expired_as_status => {
            return Err(Failure::new(410, too_old(rv, store.compacted)));
        }
        Some(rv) if rv < store.compacted => {
            // The real server also answers 200 and puts the 410 in the stream.
            pending.push_back(expired_line(rv, store.compacted));
            phase = Phase::Closing;
            rv
        }
        Some(rv) => rv,
    };
    let bookmark_interval = store.bookmark_interval;
    shared.open_watches.fetch_add(1, Ordering::SeqCst);
    let guard = WatchGuard(shared.clone());
    let mut stream = WatchStream {
        guard,
        signal,
        expire_gen: seen.expire_gen,
        drop_gen: seen.drop_gen,
        def,
        filter,
        cursor,
        pending,
        phase,
        bookmarks,
        bookmark_interval,
        next_bookmark: Instant::now() + bookmark_interval,
        deadline: timeout.map(|s| Instant::now() + Duration::from_secs(s)),
    };
    if stream.phase == Phase::Live {
        stream.catch_up(&store);
    }
    drop(store);

    let body = futures::stream::unfold(stream, |mut stream| async move {
        let chunk = stream.next_chunk().await?;
        Some((chunk, stream))
    });
    Ok(Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from_stream(body))
        .expect("build watch response"))
}

impl WatchStream {
    async fn next_chunk(&mut self) -> Option<Result<Bytes, io::Error>> {
        loop {
            if let Some(line) = self.pending.pop_front() {
                return Some(Ok(line));
            }
            match self.phase {
                Phase::Live => {}
                Phase::Closing | Phase::Done => {
                    self.phase = Phase::Done;
                    return None;
                }
                Phase::Abort => {
                    self.phase = Phase::Done;
                    return Some(Err(io::Error::new(
                        io::ErrorKind::ConnectionAborted,
                        "watch cut by the fake kube (drop_watches or shutdown)",
                    )));
                }
                Phase::Stalled => {
                    let signal = self.signal.changed().await.map(|()| *self.signal.borrow());
                    match signal {
                        Ok(s) if !s.shutdown && s.drop_gen == self.drop_gen => {}
                        _ => self.phase = Phase::Abort,
                    }
                    continue;
                }
            }
            self.poll_store();
            if !self.pending.is_empty() || self.phase != Phase::Live {
                continue;
            }
            let deadline = self.deadline;
            tokio::select! {
                changed = self.signal.changed() => {
                    if changed.is_err() {
                        self.phase = Phase::Abort;
                    }
                }
                () = tokio::time::sleep_until(self.next_bookmark), if self.bookmarks => {
                    self.poll_store();
                    if self.pending.is_empty() && self.phase == Phase::Live {
                        self.pending.push_back(bookmark_line(self.def, self.cursor, false));
                    }
                    self.next_bookmark = Instant::now() + self.bookmark_interval;
                }
                () = sleep_until_opt(deadline) => {
                    self.phase = Phase::Closing;
                }
            }
        }
    }

    /// Reacts to control signals and queues the changes made since the last call.
    fn poll_store(&mut self) {
        let shared = self.guard.0.clone();
        let store = shared.store();
        let signal = *self.signal.borrow_and_update();
        if signal.shutdown || signal.drop_gen != self.drop_gen {
            self.pending.clear();
            self.phase = Phase::Abort;
            return;
        }
        if signal.watches_stalled {
            // What was not sent yet is lost with the connection; a client resuming from the
            // last version it saw gets it again.
            self.pending.clear();
            self.phase = Phase::Stalled;
            return;
        }
        if signal.expire_gen != self.expire_gen {
            self.pending
                .push_back(expired_line(self.cursor, store.compacted));
            self.phase = Phase::Closing;
            return;
        }
        self.catch_up(&store);
    }

    fn catch_up(&mut self, store: &Store) {
        let before = self.pending.len();
        let start = store.log.partition_point(|c| c.rv <= self.cursor);
        for change in &store.log[start..] {
            if change.resource != self.def.plural {
                continue;
            }
            let now = self.filter.matches(&change.object);
            let event = match change.kind {
                ChangeKind::Added => now.then_some("ADDED"),
                ChangeKind::Deleted => now.then_some("DELETED"),
                ChangeKind::Modified => {
                    let before = change
                        .previous
                        .as_ref()
                        .is_some_and(|p| self.filter.matches(p));
                    match (before, now) {
                        (true, true) => Some("MODIFIED"),
                        // As a real server: the object left this watch's view, so it is
                        // "deleted" for this watcher, carrying its new state.
                        (true, false) => Some("DELETED"),
                        (false, true) => Some("ADDED"),
                        (false, false) => None,
                    }
                }
            };
            if let Some(event) = event {
                self.pending.push_back(event_line(event, &change.object));
            }
        }
        self.cursor = self.cursor.max(store.rv);
        if self.pending.len() > before {
            self.next_bookmark = Instant::now() + self.bookmark_interval;
        }
    }
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

// ---------------------------------------------------------------------------------------------

/// Now as RFC 3339 UTC seconds, the form of `metadata.creationTimestamp`.
fn rfc3339_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Days since 1970-01-01 to a proleptic Gregorian date, counting in 400-year eras that
    // start on 1 March so the leap day falls at the end of each year.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}
