//! Where the suites' mock servers run: an axum router served on a free
//! loopback port for the rest of the test process.

use std::net::SocketAddr;

use axum::Router;
use tokio::net::TcpListener;

/// A listener on a free loopback port, for a server that must know its
/// own address before its router is built (links it writes out).
pub async fn listener() -> TcpListener {
    TcpListener::bind("127.0.0.1:0").await.unwrap()
}

/// Serves `app` on `listener` in the background; its address.
pub fn serve_on(listener: TcpListener, app: Router) -> SocketAddr {
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

/// Serves `app` on a free loopback port in the background; its address.
pub async fn serve(app: Router) -> SocketAddr {
    serve_on(listener().await, app)
}
