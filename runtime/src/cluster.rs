//! Connecting the processes of a multi-process job.
//!
//! Timely does all communication between processes; this module only opens the TCP
//! connections it runs on (as timely's own `create_sockets` does: each process listens on its
//! address, connects to every process before it, accepts every process after it) with a
//! deadline and errors that name the process and address, instead of retrying forever and
//! printing progress to stdout, which is the job's output channel. Every connection is
//! authenticated ([`crate::handshake`]) before it is handed to timely; a connection that fails
//! the handshake is refused (and reported on stderr) while the process goes on waiting for
//! its real peers.

use std::any::Any;
use std::io::ErrorKind;
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use timely::communication::allocator::zero_copy::initialize::initialize_networking_from_sockets;
use timely::communication::allocator::{AllocatorBuilder, ProcessBuilder};
use timely::communication::Hooks;

use crate::config::Cluster;
use crate::error::{Error, Result};
use crate::handshake;

/// How long a process waits for the others to come up.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(60);
/// How long one handshake may take (a silent stranger cannot hold a process up longer).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// Connects this process to the others; returns timely's allocator builders (one per local
/// worker) and the guard that keeps the network threads alive.
pub(crate) fn connect(
    cluster: &Cluster,
    threads: usize,
) -> Result<(Vec<AllocatorBuilder>, Box<dyn Any + Send>)> {
    let (me, n) = (cluster.process, cluster.hosts.len());
    let address = &cluster.hosts[me];
    let fail = |msg: String| Error::Cluster(format!("process {me}: {msg}"));
    let listener =
        TcpListener::bind(address).map_err(|e| fail(format!("cannot listen on {address}: {e}")))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| fail(format!("{address}: {e}")))?;
    let deadline = Instant::now() + CONNECT_TIMEOUT;
    let mut sockets: Vec<Option<TcpStream>> = (0..n).map(|_| None).collect();

    for (i, peer) in cluster.hosts.iter().enumerate().take(me) {
        let mut stream = loop {
            match TcpStream::connect(peer) {
                Ok(stream) => break stream,
                Err(e) if Instant::now() >= deadline => {
                    return Err(fail(format!("could not connect to process {i} at {peer} within {CONNECT_TIMEOUT:?}: {e}")));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        };
        stream
            .set_nodelay(true)
            .map_err(|e| fail(format!("{peer}: {e}")))?;
        stream
            .set_read_timeout(Some(HANDSHAKE_TIMEOUT))
            .map_err(|e| fail(format!("{peer}: {e}")))?;
        handshake::client(&mut stream, &cluster.secret, me, i, n).map_err(|e| {
            fail(format!(
                "the handshake with process {i} at {peer} failed: {e}"
            ))
        })?;
        stream
            .set_read_timeout(None)
            .map_err(|e| fail(format!("{peer}: {e}")))?;
        sockets[i] = Some(stream);
    }

    while sockets.iter().skip(me + 1).any(Option::is_none) {
        match listener.accept() {
            Ok((mut stream, from)) => {
                stream
                    .set_nonblocking(false)
                    .map_err(|e| fail(format!("{from}: {e}")))?;
                stream
                    .set_nodelay(true)
                    .map_err(|e| fail(format!("{from}: {e}")))?;
                stream
                    .set_read_timeout(Some(HANDSHAKE_TIMEOUT))
                    .map_err(|e| fail(format!("{from}: {e}")))?;
                stream
                    .set_write_timeout(Some(HANDSHAKE_TIMEOUT))
                    .map_err(|e| fail(format!("{from}: {e}")))?;
                let id = match handshake::server(&mut stream, &cluster.secret, me, n) {
                    Ok(id) => id,
                    Err(why) => {
                        // A stranger (or a process of another job): refuse it, keep waiting.
                        eprintln!("process {me}: refused a connection from {from}: {why}");
                        continue;
                    }
                };
                if sockets[id].is_some() {
                    return Err(fail(format!(
                        "{from} proved the job secret as process {id}, which is already connected: are two processes started with --process {id}?"
                    )));
                }
                stream
                    .set_read_timeout(None)
                    .map_err(|e| fail(format!("{from}: {e}")))?;
                stream
                    .set_write_timeout(None)
                    .map_err(|e| fail(format!("{from}: {e}")))?;
                sockets[id] = Some(stream);
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    let missing: Vec<usize> =
                        (me + 1..n).filter(|i| sockets[*i].is_none()).collect();
                    return Err(fail(format!("processes {missing:?} did not connect to {address} within {CONNECT_TIMEOUT:?}")));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(fail(format!("accepting on {address}: {e}"))),
        }
    }

    let hooks = Hooks::default();
    let process =
        ProcessBuilder::new_typed_vector(threads, hooks.refill.clone(), hooks.spill.clone());
    let (builders, guard) =
        initialize_networking_from_sockets(process, sockets, me, threads, hooks)
            .map_err(|e| fail(format!("starting timely's network threads: {e}")))?;
    Ok((
        builders.into_iter().map(AllocatorBuilder::Tcp).collect(),
        Box::new(guard),
    ))
}
