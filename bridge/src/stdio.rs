//! The host's link over a byte stream (the bridge's stdin and stdout): newline-delimited
//! JSON-RPC, each line bounded while it is read ([`crate::BridgeOptions::max_frame_bytes`]).

use mcp_runtime::transport::framing::{FrameReader, ReadFrame};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use mcp_machine::front::wire;

use crate::session::HostInput;

/// Reads the host's lines into the session, until the host closes its side. A line over the
/// bound is reported and skipped; the host is read again from its next line.
pub(crate) async fn read_host<R: AsyncRead + Unpin>(
    reader: R,
    max: usize,
    to_session: mpsc::Sender<HostInput>,
) {
    let mut reader = FrameReader::new(reader, max);
    loop {
        let input = match reader.next_frame().await {
            Ok(ReadFrame::Frame(line)) => HostInput::Message(wire::parse(&line)),
            Ok(ReadFrame::Oversized { seen }) => {
                if to_session
                    .send(HostInput::Oversized { seen })
                    .await
                    .is_err()
                {
                    return;
                }
                match reader.skip_line().await {
                    Ok(true) => continue,
                    Ok(false) | Err(_) => HostInput::Closed,
                }
            }
            Ok(ReadFrame::Eof | ReadFrame::Truncated { .. }) | Err(_) => HostInput::Closed,
        };
        let closed = matches!(input, HostInput::Closed);
        if to_session.send(input).await.is_err() || closed {
            return;
        }
    }
}

/// Writes the session's frames to the host, one per line, flushing when no more are queued.
/// Ends when the session drops its sender, or when a write fails (the host is gone).
pub(crate) async fn write_host<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut frames: mpsc::Receiver<Vec<u8>>,
) -> std::io::Result<()> {
    while let Some(frame) = frames.recv().await {
        writer.write_all(&frame).await?;
        writer.write_all(b"\n").await?;
        while let Ok(frame) = frames.try_recv() {
            writer.write_all(&frame).await?;
            writer.write_all(b"\n").await?;
        }
        writer.flush().await?;
    }
    writer.flush().await
}
