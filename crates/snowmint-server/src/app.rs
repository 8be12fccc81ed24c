//! The router: both listeners' routes, and the layers every request
//! passes on its way in.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::Router;
use axum::extract::Request;
use axum::handler::Handler;
use axum::http::Method;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::future::RouteFuture;
use axum::routing::{MethodFilter, MethodRouter, on};
use pin_project_lite::pin_project;
use tower::{Layer, Service};

use crate::guard::check::{Check, CheckLayer};
use crate::guard::edge::{Edge, EdgeLayer};
use crate::guard::origin::RefuseCrossSite;
use crate::guard::token::RequireToken;
use crate::routes::state::AppState;
use crate::routes::{ADMIN_ROUTES, PUBLIC_ROUTES_WITHOUT_METRICS, ROUTES, api, openapi, page};

/// One listener's whole service: the edge (see `guard::edge`), the
/// cross-site refusal on the public listener, then the router. A
/// `tower::Service` of requests; tests drive it with
/// `tower::ServiceExt::oneshot`, no socket.
///
/// The edge and the cross-site check wrap the router from outside, rather
/// than being layered onto every route with `Router::layer`: each layer the
/// router nests costs every request a clone of the boxed routes below it,
/// a `Oneshot` and a mapping of its answer. Both see every request the
/// routes and the fallbacks (404, 405) see, as before; the edge names the
/// route from the path itself (`routes::route_label`).
#[derive(Debug, Clone)]
pub struct App {
    service: Edge<Check<Dispatch, Option<RefuseCrossSite>>>,
    /// Whether a route reads the client's address (`ConnectInfo`): only a
    /// mint, against a client quota. Without one, the accept loop leaves
    /// the request's extensions empty, which spares it two allocations.
    needs_peer: bool,
}

impl Service<Request> for App {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.service.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        self.answer(request)
    }
}

impl App {
    /// The answer to `request`: [`Service::call`] without the
    /// `poll_ready` before it, which every layer here answers ready at
    /// once (the edge and the check ask the router, and an axum router is
    /// always ready). The accept loop calls this for each request on its
    /// connection's own `App`.
    pub(crate) fn answer(
        &mut self,
        request: Request,
    ) -> Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>> {
        self.service.call(request)
    }

    /// This listener's service for one connection: the same routes and
    /// state, with the handles its requests clone (the state, the metrics)
    /// counted apart from other connections' (see
    /// [`AppState::for_connection`]). The accept loop makes one for each
    /// connection it serves.
    pub(crate) fn for_connection(&self) -> App {
        let mut app = self.clone();
        app.service = app.service.for_connection();
        let dispatch = app.service.inner_mut().inner_mut();
        dispatch.state = dispatch.state.for_connection();
        app
    }

    /// Whether requests need the client's address in their extensions
    /// (`ConnectInfo`); see [`App::needs_peer`](App#structfield.needs_peer).
    pub(crate) fn needs_peer(&self) -> bool {
        self.needs_peer
    }
}

/// The public listener's service: its routes, with `/metrics` unless the
/// state says an admin listener serves it.
pub fn app(state: AppState) -> App {
    let mint = with_token(&state, post(api::mint));
    let mut router = Table::default()
        .route("/", get(page::index))
        .route("/assets/{file}", get(page::asset))
        .route("/favicon.ico", get(page::favicon))
        .route("/api/v1/compose", with_cors(&state, get(api::compose)))
        .route("/api/v1/decode/{id}", with_cors(&state, get(api::decode)))
        .route("/api/v1/range", with_cors(&state, get(api::range)))
        .route("/api/v1/sql", with_cors(&state, get(api::sql)))
        .route("/api/v1/layout", with_cors(&state, get(api::layout_lab)))
        .route("/api/v1/detect", with_cors(&state, get(api::detect)))
        .route("/api/v1/ids", with_cors(&state, mint))
        .route("/api/v1/openapi.json", with_cors(&state, get(openapi::doc)))
        .route("/healthz", get(api::healthz))
        .route("/readyz", get(api::readyz));
    let routes = if state.metrics_on_public() {
        router = router.route("/metrics", metrics_route(&state));
        ROUTES
    } else {
        PUBLIC_ROUTES_WITHOUT_METRICS
    };
    let cross_site = RefuseCrossSite(Arc::clone(&state.origins));
    outer_layers(router, state, Some(cross_site), routes)
}

/// The admin listener's service: `/healthz`, `/readyz` and `/metrics`.
pub fn admin_app(state: AppState) -> App {
    let router = Table::default()
        .route("/healthz", get(api::healthz))
        .route("/readyz", get(api::readyz))
        .route("/metrics", metrics_route(&state));
    outer_layers(router, state, None, ADMIN_ROUTES)
}

/// `GET /metrics`, behind the token when one is configured.
fn metrics_route(state: &AppState) -> Endpoint {
    with_token(state, get(api::metrics))
}

/// A route behind the token (a route layer, so 404 and 405 never depend on
/// credentials) when one is configured; without one, as it is.
fn with_token(state: &AppState, endpoint: Endpoint) -> Endpoint {
    match &state.token {
        Some(token) => Endpoint {
            route: endpoint
                .route
                .route_layer(CheckLayer(RequireToken(token.clone()))),
            direct: None,
        },
        None => endpoint,
    }
}

/// An API route, with CORS for the allowed origins (when there are any).
fn with_cors(state: &AppState, endpoint: Endpoint) -> Endpoint {
    match state.origins.cors_layer() {
        // The layer answers every OPTIONS request itself (the preflight);
        // the route needs one, or the router's 405 would come first.
        Some(cors) => Endpoint {
            route: endpoint
                .route
                .options(|| async { StatusCode::NO_CONTENT })
                .layer(cors),
            direct: None,
        },
        None => endpoint,
    }
}

/// What axum's function handlers answer with.
type Answered = Pin<Box<dyn Future<Output = Response> + Send>>;

/// A route's handler, called for requests of its one method without the
/// method router around it (see [`Dispatch`]).
#[derive(Clone)]
struct Direct {
    method: Method,
    call: Arc<dyn Fn(Request, AppState) -> Answered + Send + Sync>,
}

/// A route as it is set up: its method router, and its handler to call
/// directly while nothing is layered onto the route (the token and CORS
/// layers drop it: a request of a guarded route always goes through them).
struct Endpoint {
    route: MethodRouter<AppState>,
    direct: Option<Direct>,
}

/// The route that answers GET (and HEAD) with `handler`.
fn get<H, T>(handler: H) -> Endpoint
where
    H: Handler<T, AppState, Future = Answered>,
    T: 'static,
{
    endpoint(Method::GET, handler)
}

/// The route that answers POST with `handler`.
fn post<H, T>(handler: H) -> Endpoint
where
    H: Handler<T, AppState, Future = Answered>,
    T: 'static,
{
    endpoint(Method::POST, handler)
}

/// The route that answers `method` with `handler` (and HEAD too, for GET).
fn endpoint<H, T>(method: Method, handler: H) -> Endpoint
where
    H: Handler<T, AppState, Future = Answered>,
    T: 'static,
{
    let filter = MethodFilter::try_from(method.clone()).expect("a method axum routes");
    let direct = handler.clone();
    Endpoint {
        route: on(filter, handler),
        direct: Some(Direct {
            method,
            call: Arc::new(move |request, state| direct.clone().call(request, state)),
        }),
    }
}

/// What both listeners share: JSON 404 and 405, the cross-site refusal
/// (public listener only), and around every answer the edge (head and body
/// limits, the request timeout, panics as JSON 500, security headers, the
/// error shape, request metrics, debug spans and the access log), one
/// layer for all of it, labelling requests by the patterns `routes`.
fn outer_layers(
    table: Table,
    state: AppState,
    cross_site: Option<RefuseCrossSite>,
    routes: &'static [&'static str],
) -> App {
    let metrics = Arc::clone(&state.metrics);
    let needs_peer = state.admission.has_client_quota();
    let exact = table
        .exact
        .into_iter()
        .map(|(path, endpoint)| {
            let route = endpoint
                .route
                .fallback(api::method_not_allowed)
                .with_state(state.clone());
            (path, route, endpoint.direct)
        })
        .collect();
    let state_for_direct = state.clone();
    let router = table
        .router
        .fallback(api::not_found)
        .method_not_allowed_fallback(api::method_not_allowed)
        .with_state(state);
    let dispatch = Dispatch {
        exact,
        router,
        state: state_for_direct,
    };
    App {
        service: EdgeLayer::new(metrics, routes).layer(CheckLayer(cross_site).layer(dispatch)),
        needs_peer,
    }
}

/// A listener's routes as they are set up: those whose pattern has no
/// parameter apart, the others in axum's router.
#[derive(Default)]
struct Table {
    exact: Vec<(&'static str, Endpoint)>,
    router: Router<AppState>,
}

impl Table {
    fn route(mut self, path: &'static str, endpoint: Endpoint) -> Table {
        if path.contains('{') {
            // Its handler reads the parameter the router puts in: never
            // called directly.
            self.router = self.router.route(path, endpoint.route);
        } else {
            debug_assert!(self.exact.iter().all(|(p, _)| *p != path), "{path} twice");
            self.exact.push((path, endpoint));
        }
        self
    }
}

/// A listener's routes as they answer. A route whose pattern has no
/// parameter is found by comparing the path with each such pattern (there
/// are a dozen); a request of the method its handler answers is handed to
/// the handler directly (when no layer stands between them), any other
/// (HEAD, OPTIONS, a method it does not take: 405 with `Allow`) to its
/// method router. Any other path goes to axum's router, which holds the
/// routes with a parameter and answers 404. A request answers as it would
/// from the router, without the router's work per request: the path's
/// match in its tree, the path parameters put into the request's
/// extensions (an allocation each time, even for none), the request taken
/// apart and put together again, and for a direct call the method
/// router's clone of the boxed handler and its futures around the
/// handler's.
#[derive(Clone)]
pub(crate) struct Dispatch {
    exact: Vec<(&'static str, MethodRouter, Option<Direct>)>,
    router: Router,
    state: AppState,
}

impl std::fmt::Debug for Dispatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatch")
            .field(
                "exact",
                &self.exact.iter().map(|(p, ..)| p).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl Service<Request> for Dispatch {
    type Response = Response;
    type Error = Infallible;
    type Future = Dispatched;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // Both an axum router and a method router are always ready.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Dispatched {
        let path = request.uri().path();
        match self.exact.iter_mut().find(|(pattern, ..)| *pattern == path) {
            Some((_, _, Some(direct))) if *request.method() == direct.method => {
                Dispatched::Direct {
                    answer: (direct.call)(request, self.state.clone()),
                }
            }
            Some((_, route, _)) => Dispatched::Routed {
                future: Box::pin(route.call(request)),
            },
            None => Dispatched::Routed {
                future: Box::pin(self.router.call(request)),
            },
        }
    }
}

pin_project! {
    /// The future of a [`Dispatch`]: a method router's or the router's, or
    /// a handler's called directly.
    #[project = DispatchedProj]
    pub(crate) enum Dispatched {
        // Boxed: a route future holds its request (320 bytes in all), and
        // the edge's future, which holds this one, is allocated and copied
        // for every request, most of which are called directly.
        Routed { future: Pin<Box<RouteFuture<Infallible>>> },
        Direct { answer: Answered },
    }
}

impl Future for Dispatched {
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            DispatchedProj::Routed { future } => future.as_mut().poll(cx),
            // Without the `Content-Length` axum's route future puts into
            // every answer of a GET or a POST whose body's length is known:
            // hyper writes the same header from the same length (HTTP/1.1
            // and HTTP/2 alike) without a header value made for it (two
            // allocations) and an insert into the map.
            DispatchedProj::Direct { answer } => answer.as_mut().poll(cx).map(Ok),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mint::minter::Minter;
    use axum::body::HttpBody;
    use axum::http::header;

    /// The paths a listener's table answers, sorted.
    fn table(app: &App) -> Vec<&'static str> {
        let dispatch = app.service.inner().inner();
        let mut paths: Vec<_> = dispatch.exact.iter().map(|(path, ..)| *path).collect();
        paths.sort_unstable();
        paths
    }

    fn without_parameters(routes: &[&'static str]) -> Vec<&'static str> {
        let mut paths: Vec<_> = routes
            .iter()
            .copied()
            .filter(|p| !p.contains('{'))
            .collect();
        paths.sort_unstable();
        paths
    }

    /// Every route without a parameter is answered from the table (the
    /// router is left the two with one), on both listeners, with and
    /// without `/metrics` on the public one.
    #[test]
    fn every_route_without_a_parameter_is_in_the_table() {
        let state = AppState::new(Minter::empty());
        assert_eq!(table(&app(state.clone())), without_parameters(ROUTES));
        assert_eq!(
            table(&admin_app(state.clone())),
            without_parameters(ADMIN_ROUTES)
        );
        let public = app(state.with_admin_listener(true));
        assert_eq!(
            table(&public),
            without_parameters(PUBLIC_ROUTES_WITHOUT_METRICS)
        );
        assert_eq!(ROUTES.len() - without_parameters(ROUTES).len(), 2);
    }

    /// Each connection's service holds a state and a recorder of its own
    /// (the counts its requests clone), over the same minter, metrics and
    /// guards as the listener's.
    #[test]
    fn each_connection_counts_its_handles_apart() {
        let app = app(AppState::new(Minter::empty()));
        let (one, two) = (app.for_connection(), app.for_connection());
        let state = |app: &App| app.service.inner().inner().state.clone();
        let (a, b) = (state(&one), state(&two));
        assert!(!std::ptr::eq(&*a, &*b));
        assert!(!std::ptr::eq(&*a, &*state(&app)));
        assert!(Arc::ptr_eq(&a.minter, &b.minter) && Arc::ptr_eq(&a.metrics, &b.metrics));
        assert!(Arc::ptr_eq(&a.admission, &b.admission) && Arc::ptr_eq(&a.origins, &b.origins));
        let (x, y) = (one.service.recorder(), two.service.recorder());
        assert!(!Arc::ptr_eq(x, y) && !Arc::ptr_eq(x, app.service.recorder()));
        assert!(Arc::ptr_eq(x.metrics(), y.metrics()) && Arc::ptr_eq(x.metrics(), &a.metrics));
    }

    /// Each request's future (the edge's, which holds the routes') is
    /// allocated and copied once a request: it stays small, with the rare
    /// ways (a routed request, a body read first, an error reshaped) boxed
    /// where they are taken. Under 1 KiB it comes from glibc's per-thread
    /// cache; it was 1,856 bytes before.
    #[test]
    fn a_request_future_stays_small() {
        let mut app = app(AppState::new(Minter::empty()));
        for (method, path) in [
            ("GET", "/healthz"),
            ("POST", "/api/v1/ids"),
            ("GET", "/nope"),
        ] {
            let request = Request::builder()
                .method(method)
                .uri(path)
                .body(axum::body::Body::empty())
                .unwrap();
            let future = app.answer(request);
            let size = std::mem::size_of_val(&*future);
            assert!(size <= 768, "{method} {path}: {size} bytes");
        }
    }

    /// The table's routes whose handler is called directly, by path.
    fn direct(app: &App) -> Vec<(&'static str, Method)> {
        let dispatch = app.service.inner().inner();
        dispatch
            .exact
            .iter()
            .filter_map(|(path, _, direct)| direct.as_ref().map(|d| (*path, d.method.clone())))
            .collect()
    }

    /// Without a token or CORS, every route of the table has its handler
    /// called directly; the token takes it from the mint and `/metrics`,
    /// CORS from the API routes, so that their requests pass those layers.
    #[test]
    fn a_layer_on_a_route_takes_its_direct_call_away() {
        let state = AppState::new(Minter::empty());
        assert_eq!(
            direct(&app(state.clone())).len(),
            without_parameters(ROUTES).len()
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "s3cret-token-value-0123456789abcdef\n").unwrap();
        let token = crate::guard::token::ApiToken::load(file).unwrap();
        let guarded: Vec<_> = direct(&app(state.clone().with_token(token)))
            .into_iter()
            .map(|(path, _)| path)
            .collect();
        assert!(
            !guarded.contains(&"/api/v1/ids") && !guarded.contains(&"/metrics"),
            "{guarded:?}"
        );
        assert!(
            guarded.contains(&"/healthz") && guarded.contains(&"/api/v1/compose"),
            "{guarded:?}"
        );
        let origins = crate::guard::origin::Origins::new(["https://app.example.com"]).unwrap();
        let cors: Vec<_> = direct(&app(state.with_origins(origins)))
            .into_iter()
            .map(|(path, _)| path)
            .collect();
        assert!(
            cors.iter().all(|p| !p.starts_with("/api/")) && cors.contains(&"/healthz"),
            "{cors:?}"
        );
        assert!(cors.contains(&"/"), "{cors:?}");
    }

    /// A handler called directly answers as its method router does: the
    /// same status, headers and body, for every route of the table but the
    /// mint (whose IDs differ each time; its status and headers are
    /// compared). The router's `Content-Length` is the one header the
    /// direct answer leaves to hyper, which writes it from the body's
    /// length: the body says the same length.
    #[tokio::test]
    async fn a_direct_call_answers_as_the_method_router() {
        use tower::ServiceExt;
        let state = crate::routes::state::AppState::new(Minter::empty())
            .with_now(Arc::new(|| 1_288_834_975_657));
        let app = app(state);
        let dispatch = app.service.inner().inner().clone();
        for (path, route, direct) in dispatch.exact {
            let direct = direct.expect("no layers here");
            let request = || {
                Request::builder()
                    .method(direct.method.clone())
                    .uri(path)
                    .body(axum::body::Body::empty())
                    .unwrap()
            };
            let through_router = route.oneshot(request()).await.unwrap();
            let mut called = Dispatched::Direct {
                answer: (direct.call)(request(), dispatch.state.clone()),
            };
            let called = std::future::poll_fn(|cx| Pin::new(&mut called).poll(cx))
                .await
                .unwrap();
            assert_eq!(called.status(), through_router.status(), "{path}");
            let mut routed_headers = through_router.headers().clone();
            let length = routed_headers
                .remove(header::CONTENT_LENGTH)
                .unwrap_or_else(|| panic!("{path}: the router sets Content-Length"));
            assert_eq!(called.headers(), &routed_headers, "{path}");
            assert_eq!(
                called.body().size_hint().exact().map(|n| n.to_string()),
                Some(length.to_str().unwrap().to_owned()),
                "{path}"
            );
            let body = |r: Response| axum::body::to_bytes(r.into_body(), 1 << 20);
            let (a, b) = (
                body(called).await.unwrap(),
                body(through_router).await.unwrap(),
            );
            if path != "/api/v1/ids" {
                assert_eq!(a, b, "{path}");
            }
        }
    }
}
