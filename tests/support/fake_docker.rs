//! A fake Docker Engine API on a unix socket, speaking the wire format of Docker's API
//! reference (v1.4x): `GET /_ping`, `GET /containers/json` (with `filters`, the
//! `{"name": {"value": true}}` JSON the Go client sends; the running containers, answered
//! chunked as the daemon's JSON encoder does for a streamed body) and `GET /networks`, with the
//! daemon's `Api-Version` and `Server` headers. Tests set the containers and networks as the
//! API's JSON, read the requests it got, and make it fail.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

#[derive(Default)]
struct Inner {
    containers: String,
    networks: String,
    /// When set, every request is answered 500 with Docker's error body.
    failing: Option<String>,
    /// The raw query of each `/containers/json` request.
    queries: Vec<String>,
}

/// The running fake; stops when dropped.
pub struct FakeDocker {
    pub socket: PathBuf,
    inner: Arc<Mutex<Inner>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeDocker {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn docker_headers(mut r: Response) -> Response {
    let h = r.headers_mut();
    h.insert("api-version", HeaderValue::from_static("1.47"));
    h.insert("server", HeaderValue::from_static("Docker/27.5.1 (linux)"));
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

fn error(message: &str) -> Response {
    let body = serde_json::json!({ "message": message }).to_string();
    docker_headers((StatusCode::INTERNAL_SERVER_ERROR, body).into_response())
}

async fn ping() -> Response {
    docker_headers("OK".into_response())
}

async fn containers(State(inner): State<Arc<Mutex<Inner>>>, RawQuery(q): RawQuery) -> Response {
    let (body, failing) = {
        let mut i = inner.lock().expect("lock");
        i.queries.push(q.unwrap_or_default());
        (i.containers.clone(), i.failing.clone())
    };
    if let Some(m) = failing {
        return error(&m);
    }
    // Two pieces from a stream: hyper sends them chunked, as the daemon does.
    let mid = body.len() / 2;
    let (a, b) = body.split_at(
        body.char_indices()
            .map(|(i, _)| i)
            .find(|&i| i >= mid)
            .unwrap_or(0),
    );
    let pieces: Vec<Result<String, std::io::Error>> = vec![Ok(a.to_string()), Ok(b.to_string())];
    docker_headers(Body::from_stream(futures::stream::iter(pieces)).into_response())
}

async fn networks(State(inner): State<Arc<Mutex<Inner>>>) -> Response {
    let (body, failing) = {
        let i = inner.lock().expect("lock");
        (i.networks.clone(), i.failing.clone())
    };
    match failing {
        Some(m) => error(&m),
        None => docker_headers(body.into_response()),
    }
}

impl FakeDocker {
    /// Listens on `dir/docker.sock` with no containers or networks.
    pub async fn start(dir: &Path) -> FakeDocker {
        let socket = dir.join("docker.sock");
        let listener = tokio::net::UnixListener::bind(&socket).expect("bind the socket");
        let inner = Arc::new(Mutex::new(Inner {
            containers: "[]".into(),
            networks: "[]".into(),
            ..Inner::default()
        }));
        let app = axum::Router::new()
            .route("/_ping", get(ping))
            .route("/containers/json", get(containers))
            .route("/networks", get(networks))
            .with_state(inner.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeDocker {
            socket,
            inner,
            task,
        }
    }

    /// `unix://<socket>`, the `host` argument.
    pub fn host(&self) -> String {
        format!("unix://{}", self.socket.display())
    }

    pub fn set(&self, containers: &str, networks: &str) {
        let mut i = self.inner.lock().expect("lock");
        i.containers = containers.into();
        i.networks = networks.into();
    }

    pub fn fail(&self, message: Option<&str>) {
        self.inner.lock().expect("lock").failing = message.map(str::to_string);
    }

    pub fn queries(&self) -> Vec<String> {
        self.inner.lock().expect("lock").queries.clone()
    }
}
