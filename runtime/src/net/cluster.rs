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
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use timely::communication::allocator::zero_copy::initialize::initialize_networking_from_sockets;
use timely::communication::allocator::{AllocatorBuilder, ProcessBuilder};
use timely::communication::Hooks;

use crate::config::Cluster;
use crate::error::{Error, Result};
use crate::net::handshake;

/// How long a process waits for the others to come up.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(60);
/// How long one handshake may take (a silent stranger cannot hold a process up longer).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// What keeps timely's network threads alive (timely hands it over as `Box<dyn Any + Send>`).
pub(crate) type NetworkGuard = Box<dyn Any + Send>;

/// Connects this process to the others; returns timely's allocator builders (one per local
/// worker) and the guard that keeps the network threads alive.
pub(crate) fn connect(
    cluster: &Cluster,
    threads: usize,
) -> Result<(Vec<AllocatorBuilder>, NetworkGuard)> {
    let me = cluster.process;
    let address = &cluster.hosts[me];
    let listener = TcpListener::bind(address)
        .map_err(|e| fail(me, format!("cannot listen on {address}: {e}")))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| fail(me, format!("{address}: {e}")))?;
    let deadline = Instant::now() + CONNECT_TIMEOUT;
    let mut sockets: Vec<Option<TcpStream>> = (0..cluster.hosts.len()).map(|_| None).collect();
    for (i, peer) in cluster.hosts.iter().enumerate().take(me) {
        sockets[i] = Some(connect_to(cluster, i, peer, deadline)?);
    }
    accept_peers(cluster, &listener, &mut sockets, deadline)?;
    start_network(sockets, me, threads)
}

/// An error of process `me` while connecting.
fn fail(me: usize, msg: String) -> Error {
    Error::Cluster(format!("process {me}: {msg}"))
}

/// Connects to process `i` (one before this one) at `peer`, retrying until `deadline`, and
/// runs the client's side of the handshake.
fn connect_to(cluster: &Cluster, i: usize, peer: &str, deadline: Instant) -> Result<TcpStream> {
    let (me, n) = (cluster.process, cluster.hosts.len());
    let mut stream = loop {
        match TcpStream::connect(peer) {
            Ok(stream) => break stream,
            Err(e) if Instant::now() >= deadline => {
                return Err(fail(me, format!("could not connect to process {i} at {peer} within {CONNECT_TIMEOUT:?}: {e}")));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    let io = |e: std::io::Error| fail(me, format!("{peer}: {e}"));
    stream.set_nodelay(true).map_err(io)?;
    stream
        .set_read_timeout(Some(HANDSHAKE_TIMEOUT))
        .map_err(io)?;
    handshake::client(&mut stream, &cluster.secret, me, i, n).map_err(|e| {
        fail(
            me,
            format!("the handshake with process {i} at {peer} failed: {e}"),
        )
    })?;
    stream.set_read_timeout(None).map_err(io)?;
    Ok(stream)
}

/// Accepts the processes after this one until each has connected and proved the job's
/// secret, or `deadline` passes; strangers are refused (and reported on stderr).
fn accept_peers(
    cluster: &Cluster,
    listener: &TcpListener,
    sockets: &mut [Option<TcpStream>],
    deadline: Instant,
) -> Result<()> {
    let (me, n) = (cluster.process, cluster.hosts.len());
    let address = &cluster.hosts[me];
    while sockets.iter().skip(me + 1).any(Option::is_none) {
        match listener.accept() {
            Ok((stream, from)) => {
                if let Some((id, stream)) = accept_one(cluster, stream, from, sockets)? {
                    sockets[id] = Some(stream);
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    let missing: Vec<usize> =
                        (me + 1..n).filter(|i| sockets[*i].is_none()).collect();
                    return Err(fail(me, format!("processes {missing:?} did not connect to {address} within {CONNECT_TIMEOUT:?}")));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(fail(me, format!("accepting on {address}: {e}"))),
        }
    }
    Ok(())
}

/// The server's side of the handshake on one accepted connection: the peer's process index
/// and its stream, or `None` for a stranger (refused, reported on stderr).
fn accept_one(
    cluster: &Cluster,
    mut stream: TcpStream,
    from: SocketAddr,
    sockets: &[Option<TcpStream>],
) -> Result<Option<(usize, TcpStream)>> {
    let (me, n) = (cluster.process, cluster.hosts.len());
    let io = |e: std::io::Error| fail(me, format!("{from}: {e}"));
    stream.set_nonblocking(false).map_err(io)?;
    stream.set_nodelay(true).map_err(io)?;
    stream
        .set_read_timeout(Some(HANDSHAKE_TIMEOUT))
        .map_err(io)?;
    stream
        .set_write_timeout(Some(HANDSHAKE_TIMEOUT))
        .map_err(io)?;
    let id = match handshake::server(&mut stream, &cluster.secret, me, n) {
        Ok(id) => id,
        Err(why) => {
            // A stranger (or a process of another job): refuse it, keep waiting.
            eprintln!("process {me}: refused a connection from {from}: {why}");
            return Ok(None);
        }
    };
    if sockets[id].is_some() {
        return Err(fail(me, format!(
            "{from} proved the job secret as process {id}, which is already connected: are two processes started with --process {id}?"
        )));
    }
    stream.set_read_timeout(None).map_err(io)?;
    stream.set_write_timeout(None).map_err(io)?;
    Ok(Some((id, stream)))
}

/// Hands the connected sockets to timely's network threads.
fn start_network(
    sockets: Vec<Option<TcpStream>>,
    me: usize,
    threads: usize,
) -> Result<(Vec<AllocatorBuilder>, NetworkGuard)> {
    let hooks = Hooks::default();
    let process =
        ProcessBuilder::new_typed_vector(threads, hooks.refill.clone(), hooks.spill.clone());
    let (builders, guard) =
        initialize_networking_from_sockets(process, sockets, me, threads, hooks)
            .map_err(|e| fail(me, format!("starting timely's network threads: {e}")))?;
    Ok((
        builders.into_iter().map(AllocatorBuilder::Tcp).collect(),
        Box::new(guard),
    ))
}
