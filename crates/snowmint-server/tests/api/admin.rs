//! The admin listener.

use crate::support::*;

#[tokio::test]
async fn an_admin_listener_takes_health_readiness_and_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let config = static_config(dir.path().to_owned());
    let public = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let admin = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (public_addr, admin_addr) = (public.local_addr().unwrap(), admin.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(snowmint_server::run_with(
        snowmint_server::Listeners {
            public,
            admin: Some(admin),
        },
        static_state(&config).unwrap(),
        snowmint_server::Limits::default(),
        async {
            let _ = stopped.await;
        },
    ));
    let get = |addr: std::net::SocketAddr, method: &'static str, path: &'static str| async move {
        raw_request(
            addr,
            &format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"),
        )
        .await
    };
    let (status, _, body) = get(public_addr, "GET", "/metrics").await;
    assert_eq!(status, 404, "{body}");
    error_shape("public /metrics", &body);
    let (status, _, body) = get(admin_addr, "GET", "/metrics").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("# TYPE snowmint_ready gauge"), "{body}");
    // The page no longer links to it.
    let (_, _, page) = get(public_addr, "GET", "/").await;
    assert!(!page.contains("href=\"/metrics\""), "{page}");
    // Health and readiness on both; the API only on the public one.
    for path in ["/healthz", "/readyz"] {
        for addr in [public_addr, admin_addr] {
            let (status, head, body) = get(addr, "GET", path).await;
            assert_eq!(status, 200, "{addr}{path}: {body}");
            assert_head_is_guarded(&head);
        }
    }
    for (method, path) in [
        ("GET", "/"),
        ("POST", "/api/v1/ids"),
        ("GET", "/nope"),
        ("POST", "/metrics"),
    ] {
        let (status, head, body) = get(admin_addr, method, path).await;
        assert!(status == 404 || status == 405, "{method} {path}: {status}");
        assert_head_is_guarded(&head);
        error_shape(path, &body);
    }
    // One shutdown stops both.
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(15), server)
        .await
        .expect("both listeners stop")
        .unwrap()
        .expect("clean shutdown");
    assert!(tokio::net::TcpStream::connect(admin_addr).await.is_err());
}
