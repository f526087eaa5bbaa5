//! Byte-stream transports: TCP, Unix socket and in-process duplex servers.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use mcp_runtime::transport::{
    self, Connector, SendOutcome, StreamConnector, TransportConfig, TransportError, TransportEvent,
    TransportHandle,
};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::time::timeout;

/// Echoes every line back, prefixed with a tag so tests can tell servers apart.
async fn echo_server<R, W>(reader: R, mut writer: W, tag: String)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut lines = BufReader::new(reader).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let reply = format!("{{\"tag\":\"{tag}\",\"echo\":{line}}}\n");
        if writer.write_all(reply.as_bytes()).await.is_err() {
            return;
        }
    }
}

async fn round_trip(handle: &TransportHandle, rx: &mut Events, body: &str) -> String {
    assert_eq!(handle.try_send(body.as_bytes().to_vec()), SendOutcome::Ok);
    handle.grant_credit();
    String::from_utf8(expect_frame(rx).await).unwrap()
}

#[tokio::test]
async fn tcp_round_trip() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let (r, w) = stream.into_split();
        echo_server(r, w, "tcp".into()).await;
    });
    let connector = StreamConnector::tcp(addr);
    assert_eq!(connector.describe(), format!("tcp {addr}"));
    let (handle, mut rx) = start(Arc::new(connector), 1, small());
    expect_up(&mut rx).await;
    assert_eq!(
        round_trip(&handle, &mut rx, "{\"a\":1}").await,
        r#"{"tag":"tcp","echo":{"a":1}}"#
    );
    assert_eq!(
        round_trip(&handle, &mut rx, "[2]").await,
        r#"{"tag":"tcp","echo":[2]}"#
    );
    handle.close();
    assert!(matches!(expect_down(&mut rx).await, TransportError::Closed));
    // Our write half was shut down, so the server saw EOF and ended.
    timeout(WAIT, server).await.unwrap().unwrap();
}

#[tokio::test]
async fn tcp_connect_refused_is_down_connect() {
    // Bind then drop to get a port that is (very likely) closed.
    let addr = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    let (_handle, mut rx) = start(Arc::new(StreamConnector::tcp(addr)), 1, small());
    assert!(matches!(
        expect_down(&mut rx).await,
        TransportError::Connect(_)
    ));
}

#[tokio::test]
async fn tcp_peer_close_is_eof() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        stream.write_all(b"{\"last\":true}\n{\"cut").await.unwrap();
    });
    let (handle, mut rx) = start(Arc::new(StreamConnector::tcp(addr)), 1, small());
    expect_up(&mut rx).await;
    handle.grant_credit();
    assert_eq!(expect_frame(&mut rx).await, b"{\"last\":true}".to_vec());
    handle.grant_credit();
    assert!(matches!(
        expect_down(&mut rx).await,
        TransportError::Truncated { partial: 5 }
    ));
}

#[cfg(unix)]
#[tokio::test]
async fn unix_socket_round_trip() {
    let path = std::env::temp_dir().join(format!("mcp-rt-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let (r, w) = stream.into_split();
        echo_server(r, w, "unix".into()).await;
    });
    let (handle, mut rx) = start(Arc::new(StreamConnector::unix(&path)), 1, small());
    expect_up(&mut rx).await;
    assert_eq!(
        round_trip(&handle, &mut rx, "{}").await,
        r#"{"tag":"unix","echo":{}}"#
    );
    handle.close();
    assert!(matches!(expect_down(&mut rx).await, TransportError::Closed));
    let _ = std::fs::remove_file(&path);
}

/// An in-process server over `tokio::io::duplex`, one fresh server per connect.
fn duplex_connector(connects: Arc<AtomicUsize>) -> StreamConnector {
    StreamConnector::from_fn(move || {
        let n = connects.fetch_add(1, Ordering::SeqCst) + 1;
        async move {
            let (client, server) = tokio::io::duplex(64 * 1024);
            let (sr, sw) = tokio::io::split(server);
            tokio::spawn(echo_server(sr, sw, format!("conn{n}")));
            Ok(tokio::io::split(client))
        }
    })
    .with_description("duplex echo")
}

#[tokio::test]
async fn duplex_round_trip() {
    let connector = duplex_connector(Arc::new(AtomicUsize::new(0)));
    assert_eq!(connector.describe(), "duplex echo");
    let (handle, mut rx) = start(Arc::new(connector), 1, small());
    expect_up(&mut rx).await;
    assert_eq!(
        round_trip(&handle, &mut rx, "{\"x\":\"y\"}").await,
        r#"{"tag":"conn1","echo":{"x":"y"}}"#
    );
    handle.close();
    assert!(matches!(expect_down(&mut rx).await, TransportError::Closed));
}

#[tokio::test]
async fn reconnect_gives_independent_generations() {
    let connects = Arc::new(AtomicUsize::new(0));
    let connector: Arc<dyn Connector> = Arc::new(duplex_connector(Arc::clone(&connects)));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let first = transport::spawn(Arc::clone(&connector), 1, small(), tx.clone());
    assert!(matches!(next(&mut rx).await, (1, TransportEvent::Up)));
    assert_eq!(first.try_send(b"1".to_vec()), SendOutcome::Ok);
    first.grant_credit();
    match next(&mut rx).await {
        (1, TransportEvent::Frame(f)) => assert_eq!(f, br#"{"tag":"conn1","echo":1}"#.to_vec()),
        other => panic!("{other:?}"),
    }
    first.close();
    assert!(matches!(
        next(&mut rx).await,
        (1, TransportEvent::Down(TransportError::Closed))
    ));

    let second = transport::spawn(Arc::clone(&connector), 2, small(), tx);
    assert!(matches!(next(&mut rx).await, (2, TransportEvent::Up)));
    assert_eq!(first.try_send(b"0".to_vec()), SendOutcome::Failed);
    assert_eq!(second.try_send(b"2".to_vec()), SendOutcome::Ok);
    second.grant_credit();
    match next(&mut rx).await {
        (2, TransportEvent::Frame(f)) => assert_eq!(f, br#"{"tag":"conn2","echo":2}"#.to_vec()),
        other => panic!("{other:?}"),
    }
    assert_eq!(connects.load(Ordering::SeqCst), 2);
    drop(second);
    assert!(matches!(
        next(&mut rx).await,
        (2, TransportEvent::Down(TransportError::Closed))
    ));
}

#[tokio::test]
async fn open_error_is_down_connect() {
    let connector = StreamConnector::from_fn(|| async {
        Err::<(tokio::io::Empty, tokio::io::Sink), _>(std::io::Error::other("no server today"))
    });
    let (_handle, mut rx) = start(Arc::new(connector), 1, small());
    match expect_down(&mut rx).await {
        TransportError::Connect(e) => assert_eq!(e.to_string(), "no server today"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn close_while_connecting_is_down_closed() {
    let connector = StreamConnector::from_fn(|| async {
        std::future::pending::<()>().await;
        Ok((tokio::io::empty(), tokio::io::sink()))
    });
    let (handle, mut rx) = start(Arc::new(connector), 1, small());
    handle.close();
    assert!(matches!(expect_down(&mut rx).await, TransportError::Closed));
}

/// The real 16 MiB limit end to end over a duplex: exactly 16 MiB is a frame, 16 MiB + 1 is
/// reported as oversized and ends the link.
#[tokio::test]
async fn sixteen_mib_limit_over_duplex() {
    const MAX: usize = 16 * 1024 * 1024;
    let connector = StreamConnector::from_fn(|| async {
        let (client, mut server) = tokio::io::duplex(256 * 1024);
        tokio::spawn(async move {
            let mut line = vec![b'7'; MAX];
            line.push(b'\n');
            server.write_all(&line).await?;
            line.pop();
            line.extend_from_slice(b"8\n");
            server.write_all(&line).await?;
            std::future::pending::<()>().await;
            Ok::<_, std::io::Error>(())
        });
        Ok(tokio::io::split(client))
    });
    let (handle, mut rx) = start(Arc::new(connector), 1, TransportConfig::default());
    expect_up(&mut rx).await;
    handle.grant_credit();
    let frame = expect_frame(&mut rx).await;
    assert_eq!(frame.len(), MAX);
    handle.grant_credit();
    match next(&mut rx).await {
        (_, TransportEvent::Oversized { seen }) => assert!(seen > MAX, "seen {seen}"),
        (_, other) => panic!("expected Oversized, got {other:?}"),
    }
    assert!(matches!(
        expect_down(&mut rx).await,
        TransportError::Oversized { max: MAX, .. }
    ));
}

/// A server that writes `count` frames of `size` bytes at once and then waits.
fn flood_connector(count: usize, size: usize) -> StreamConnector {
    StreamConnector::from_fn(move || async move {
        let (client, server) = tokio::io::duplex(256 * 1024);
        let (_sr, mut sw) = tokio::io::split(server);
        tokio::spawn(async move {
            let frame = format!("\"{}\"\n", "x".repeat(size - 2));
            for _ in 0..count {
                if sw.write_all(frame.as_bytes()).await.is_err() {
                    return;
                }
            }
            // Hold the link open until the test ends it.
            std::future::pending::<()>().await;
            drop(_sr);
        });
        Ok(tokio::io::split(client))
    })
    .with_description("flood")
}

/// The next frame, if one arrives within 200 ms (any other event fails the test).
async fn frame_soon(rx: &mut Events) -> Option<Vec<u8>> {
    match timeout(std::time::Duration::from_millis(200), rx.recv()).await {
        Err(_) => None,
        Ok(Some((_, TransportEvent::Frame(f)))) => Some(f),
        Ok(other) => panic!("expected a frame or nothing, got {other:?}"),
    }
}

#[tokio::test]
async fn a_read_window_delivers_that_many_frames_and_no_more() {
    let (handle, mut rx) = start(Arc::new(flood_connector(10, 100)), 1, small());
    expect_up(&mut rx).await;
    assert!(
        frame_soon(&mut rx).await.is_none(),
        "no frame before a credit"
    );
    handle.grant_credits(4);
    for _ in 0..4 {
        let frame = expect_frame(&mut rx).await;
        assert_eq!(frame.len(), 100);
        handle.frame_taken(&frame);
    }
    assert!(
        frame_soon(&mut rx).await.is_none(),
        "a fifth frame without a fifth credit"
    );
    handle.grant_credit();
    expect_frame(&mut rx).await;
    handle.close();
}

#[tokio::test]
async fn read_ahead_stops_at_its_byte_budget_until_frames_are_taken() {
    // 60 KiB frames: the budget (1 MiB) holds 17 of them, the credits allow 32.
    let size = 60 * 1024;
    let budget = transport::READ_AHEAD_BYTES;
    let (handle, mut rx) = start(Arc::new(flood_connector(32, size)), 1, small());
    expect_up(&mut rx).await;
    handle.grant_credits(32);
    let mut delivered = Vec::new();
    while let Some(frame) = frame_soon(&mut rx).await {
        delivered.push(frame);
    }
    // The frame that finds the budget full waits; those before it were delivered.
    assert_eq!(
        delivered.len(),
        budget / size,
        "frames held back past the budget"
    );
    let taken = delivered.pop().unwrap();
    handle.frame_taken(&taken);
    assert_eq!(
        expect_frame(&mut rx).await.len(),
        size,
        "a frame taken makes room"
    );
    for frame in &delivered {
        handle.frame_taken(frame);
    }
    let mut rest = 0;
    while let Some(frame) = frame_soon(&mut rx).await {
        handle.frame_taken(&frame);
        rest += 1;
    }
    assert_eq!(
        delivered.len() + 2 + rest,
        32,
        "every frame credited came through"
    );
    handle.close();
}
