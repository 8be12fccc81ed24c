//! Shared helpers: the harness, requests through the router and over a
//! socket, and the contract's error shape.

pub use std::sync::Arc;
pub use std::time::{Duration, Instant};

pub use axum::body::Body;
pub use axum::http::{Request, StatusCode, header};
pub use serde_json::{Value, json};
pub use snowmint::Generator;
pub use snowmint_server::{AppState, Config, IdentitySource, Minter, app, static_state};
pub use tower::ServiceExt;

pub const REFERENCE_MS: u64 = 1288834975657;

/// The compose request that answers [`reference_object`].
pub const REFERENCE_COMPOSE: &str =
    "/api/v1/compose?timestamp=1288834975657&datacenter=1&worker=1&sequence=0";

/// A state for the router and the directory of its reservations.
pub struct Harness {
    pub state: AppState,
    pub dir: tempfile::TempDir,
}

/// The configuration of `serve` with the default static identity and its
/// state in `state_dir`.
pub fn static_config(state_dir: std::path::PathBuf) -> Config {
    let mut config = Config::default();
    config.identity_source = IdentitySource::Static {
        identity: snowmint::Identity::default(),
        state_dir,
    };
    config
}

/// The static identity (datacenter 1, worker 2) with "now" fixed at the
/// reference time.
pub fn harness() -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::default();
    config.identity_source = IdentitySource::Static {
        identity: snowmint::Identity::new(1, 2).unwrap(),
        state_dir: dir.path().to_owned(),
    };
    let state = static_state(&config)
        .unwrap()
        .with_now(Arc::new(|| REFERENCE_MS));
    Harness { state, dir }
}

/// One request through the router, without a body: the status, the
/// headers and the body's bytes.
async fn respond(
    state: &AppState,
    method: &str,
    uri: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, axum::http::HeaderMap, axum::body::Bytes) {
    let mut request = Request::builder().method(method).uri(uri);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let response = app(state.clone())
        .oneshot(request.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let (parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    (parts.status, parts.headers, bytes)
}

/// One request through the router: the status and the body (UTF-8).
pub async fn send(
    state: &AppState,
    method: &str,
    uri: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, String) {
    let (status, _, bytes) = respond(state, method, uri, headers).await;
    (status, String::from_utf8(bytes.to_vec()).unwrap())
}

pub async fn json(state: &AppState, method: &str, uri: &str) -> (StatusCode, Value) {
    let (status, body) = send(state, method, uri, &[]).await;
    let value = serde_json::from_str(&body)
        .unwrap_or_else(|e| panic!("{method} {uri}: not JSON ({e}): {body}"));
    (status, value)
}

/// Asserts the contract's error shape and returns the message.
pub async fn error(
    state: &AppState,
    method: &str,
    uri: &str,
    status: StatusCode,
    field: Option<&str>,
) -> String {
    let (got, body) = json(state, method, uri).await;
    assert_eq!(got, status, "{method} {uri}: {body}");
    let obj = body.as_object().unwrap();
    assert_eq!(obj.len(), 2, "{body}");
    assert_eq!(body["field"], json!(field), "{method} {uri}: {body}");
    body["error"].as_str().unwrap().to_owned()
}

/// [`snowmint_server::run`] on a real socket, until [`Served::stop`].
pub struct Served {
    pub addr: std::net::SocketAddr,
    pub stop: tokio::sync::oneshot::Sender<()>,
    pub server: tokio::task::JoinHandle<Result<(), snowmint_server::RunError>>,
    /// The state directory of [`Served::start_static`], kept while it serves.
    _dir: Option<tempfile::TempDir>,
}

impl Served {
    pub async fn start(state: AppState) -> Served {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(snowmint_server::run(listener, state, async {
            let _ = stopped.await;
        }));
        Served {
            addr,
            stop,
            server,
            _dir: None,
        }
    }

    /// `serve` with the default static identity, its state in a fresh
    /// directory.
    pub async fn start_static() -> Served {
        Served::start_configured(|_| {}).await
    }

    /// [`Served::start_static`] with `--client-quota quota`.
    pub async fn start_with_quota(quota: u32) -> Served {
        Served::start_configured(|config| config.client_quota = std::num::NonZeroU32::new(quota))
            .await
    }

    async fn start_configured(configure: impl FnOnce(&mut Config)) -> Served {
        let dir = tempfile::tempdir().unwrap();
        let mut config = static_config(dir.path().to_owned());
        configure(&mut config);
        let served = Served::start(static_state(&config).unwrap()).await;
        Served {
            _dir: Some(dir),
            ..served
        }
    }

    /// The request `method path` to this server, with this body.
    pub fn request<B>(&self, method: &str, path: &str, body: B) -> Request<B> {
        Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base()))
            .body(body)
            .unwrap()
    }

    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Shuts down; the server must stop cleanly.
    pub async fn stop(self) {
        self.stop.send(()).unwrap();
        self.server.await.unwrap().expect("clean shutdown");
    }
}

pub fn reference_object() -> Value {
    json!({"id": "4194439168", "timestamp_ms": 1288834975657u64, "delta_ms": 1000,
        "time": "2010-11-04T01:42:55.657Z", "datacenter": 1, "worker": 1, "sequence": 0,
        "binary": "0000000000000000000000000000000011111010000000100001000000000000",
        "segments": [
            {"name": "sign", "bits": 1, "value": 0, "binary": "0"},
            {"name": "timestamp", "bits": 41, "value": 1000, "binary": "00000000000000000000000000000001111101000"},
            {"name": "datacenter", "bits": 5, "value": 1, "binary": "00001"},
            {"name": "worker", "bits": 5, "value": 1, "binary": "00001"},
            {"name": "sequence", "bits": 12, "value": 0, "binary": "000000000000"}]})
}

/// One request through the router: status, headers and body.
pub async fn send_full(
    state: &AppState,
    method: &str,
    uri: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, axum::http::HeaderMap, String) {
    let (status, headers, bytes) = respond(state, method, uri, headers).await;
    // Lossy: the favicon is binary.
    (
        status,
        headers,
        String::from_utf8_lossy(&bytes).into_owned(),
    )
}

/// Asserts `body` is the error shape and returns the message.
pub fn error_shape(context: &str, body: &str) -> String {
    let v: Value = serde_json::from_str(body)
        .unwrap_or_else(|e| panic!("{context}: not JSON ({e}): {body:?}"));
    let obj = v.as_object().unwrap_or_else(|| panic!("{context}: {v}"));
    assert_eq!(obj.len(), 2, "{context}: {v}");
    assert!(
        obj["field"].is_null() || obj["field"].is_string(),
        "{context}: {v}"
    );
    obj["error"]
        .as_str()
        .unwrap_or_else(|| panic!("{context}: {v}"))
        .to_owned()
}

/// Raw HTTP/1.1 over a real socket (hyper's own limits apply): the status,
/// the head and the body.
pub async fn raw_request(addr: std::net::SocketAddr, request: &str) -> (u16, String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut raw))
        .await
        .expect("the server answers and closes")
        .unwrap();
    let text = String::from_utf8(raw).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("a response head");
    let status = head[9..12].parse().unwrap();
    (status, head.to_owned(), body.to_owned())
}

/// A request body without a declared length (as chunked HTTP/1.1 or
/// HTTP/2 without `Content-Length` arrive): its bytes in frames of 100.
pub struct Undeclared(Vec<axum::body::Bytes>);

impl Undeclared {
    pub fn of(len: usize) -> Undeclared {
        let bytes = vec![b'x'; len];
        Undeclared(
            bytes
                .chunks(100)
                .rev()
                .map(axum::body::Bytes::copy_from_slice)
                .collect(),
        )
    }
}

impl hyper::body::Body for Undeclared {
    type Data = axum::body::Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        std::task::Poll::Ready(self.0.pop().map(|b| Ok(hyper::body::Frame::data(b))))
    }
}

/// What an error message must say.
pub enum Says<'a> {
    /// Exactly this.
    Is(&'a str),
    /// This, then anything.
    Starts(&'a str),
    /// Anything, then this.
    Ends(&'a str),
    /// Each of these, anywhere.
    Has(&'a [&'a str]),
    /// Anything shorter than this many bytes (long input is not echoed
    /// whole).
    Shorter(usize),
    /// Anything (the shape and the field are what count).
    Any,
}

impl Says<'_> {
    /// Asserts `message` says it; `context` names the request.
    pub fn check(&self, context: &str, message: &str) {
        match *self {
            Says::Is(want) => assert_eq!(message, want, "{context}"),
            Says::Starts(want) => assert!(message.starts_with(want), "{context}: {message}"),
            Says::Ends(want) => assert!(message.ends_with(want), "{context}: {message}"),
            Says::Has(needles) => {
                for needle in needles {
                    assert!(message.contains(needle), "{context}: {message}");
                }
            }
            Says::Shorter(len) => assert!(message.len() < len, "{context}: {message}"),
            Says::Any => {}
        }
    }
}

/// Each `(uri, field, says)`: `method uri` answers 400 in the error shape,
/// naming `field`, with a message that `says`.
pub async fn refusals<U: AsRef<str>>(
    state: &AppState,
    method: &str,
    cases: &[(U, &str, Says<'_>)],
) {
    for (uri, field, says) in cases {
        let uri = uri.as_ref();
        let message = error(state, method, uri, StatusCode::BAD_REQUEST, Some(field)).await;
        says.check(&format!("{method} {uri}"), &message);
    }
}

/// `GET uri` answers 400 in the error shape, naming `field`; returns the
/// message.
pub async fn refused(state: &AppState, uri: &str, field: &str) -> String {
    error(state, "GET", uri, StatusCode::BAD_REQUEST, Some(field)).await
}

/// `method uri` answers 503 in the error shape, naming no field; returns
/// the message.
pub async fn unavailable(state: &AppState, method: &str, uri: &str) -> String {
    error(state, method, uri, StatusCode::SERVICE_UNAVAILABLE, None).await
}

/// The state of a generator (datacenter 7, worker 7) on `store`, which
/// waits up to a minute for a reservation write.
pub fn patient_state(store: snowmint::FaultyStore) -> AppState {
    let generator = Generator::builder(7, 7)
        .store(store)
        .store_timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    AppState::new(Minter::from_generator(generator))
}

/// Asserts a raw response head carries `nosniff` and `no-referrer`.
pub fn assert_head_is_guarded(head: &str) {
    let lower = head.to_ascii_lowercase();
    assert!(lower.contains("x-content-type-options: nosniff"), "{head}");
    assert!(lower.contains("referrer-policy: no-referrer"), "{head}");
}

/// `GET url` with `client`, sent.
pub async fn fetch(client: &reqwest::Client, url: String) -> reqwest::Response {
    client.get(url).send().await.unwrap()
}

/// `POST url` with `client`, sent.
pub async fn post(client: &reqwest::Client, url: String) -> reqwest::Response {
    client.post(url).send().await.unwrap()
}

/// A client of plain HTTP, HTTP/2 only (with prior knowledge) if `http2`.
pub fn hyper_client<B>(
    http2: bool,
) -> hyper_util::client::legacy::Client<hyper_util::client::legacy::connect::HttpConnector, B>
where
    B: hyper::body::Body + Send,
    B::Data: Send,
{
    hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .http2_only(http2)
        .build_http::<B>()
}

/// `GET uri` through the router: the status and the JSON answer.
pub async fn get(state: &AppState, uri: &str) -> (StatusCode, Value) {
    json(state, "GET", uri).await
}

/// The names of an ID object's segments, in order.
pub fn segment_names(v: &Value) -> Vec<&str> {
    v["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect()
}

/// `GET uri` answers 200 with `want`.
pub async fn answers(state: &AppState, uri: &str, want: &Value) {
    let (status, body) = json(state, "GET", uri).await;
    assert_eq!((status, &body), (StatusCode::OK, want), "{uri}");
}

/// What every route that takes a layout answers for `layout=flickr`.
pub const FLICKR: &str = "invalid layout: \"flickr\" is neither a preset (twitter, discord, \
    instagram, sonyflake, mastodon) nor a spec like \
    epoch=1420070400000;fields=timestamp:42,worker:5,process:5,increment:12";
