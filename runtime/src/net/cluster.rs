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
//!
//! No stranger can hold a job up: every handshake has a total deadline
//! ([`HANDSHAKE_TIMEOUT`], not a deadline per read, so a peer that trickles a byte at a time
//! is cut off too), and each accepted connection's handshake runs on a thread of its own, at
//! most [`MAX_PENDING_HANDSHAKES`] at once (a connection beyond that is closed at once), so
//! strangers that are slow, silent or send garbage on many connections delay no real peer.

use std::any::Any;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use timely::communication::allocator::zero_copy::initialize::initialize_networking_from_sockets;
use timely::communication::allocator::{AllocatorBuilder, ProcessBuilder};
use timely::communication::Hooks;

use crate::config::secret::JobSecret;
use crate::config::Cluster;
use crate::error::{Error, Result};
use crate::net::handshake;

/// How long a process waits for the others to come up.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(60);
/// How long one handshake may take in all, from its first byte to its last.
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// How many accepted connections may be in their handshake at once; a connection accepted
/// beyond that is closed at once (a flood of strangers costs threads up to this bound).
pub(crate) const MAX_PENDING_HANDSHAKES: usize = 64;

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
    for (i, socket) in sockets.iter().enumerate() {
        if let Some(s) = socket {
            watch_liveness(s, cluster.peer_timeout)
                .map_err(|e| fail(me, format!("the connection to process {i}: {e}")))?;
        }
    }
    start_network(sockets, me, threads)
}

/// Makes a connection fail once the peer has been silent for about `timeout`: keepalive
/// probes after a third of it idle (every sixth, three unanswered end it), and
/// `TCP_USER_TIMEOUT` for data sent and not acknowledged within it. A link cut without a
/// reset (a partition, a frozen host) would otherwise leave timely's network threads
/// waiting forever; with these, they see an error, and the process ends with
/// [`Error::PeerLost`].
fn watch_liveness(stream: &TcpStream, timeout: Duration) -> std::io::Result<()> {
    let socket = socket2::SockRef::from(stream);
    let keepalive = socket2::TcpKeepalive::new()
        .with_time((timeout / 3).max(Duration::from_secs(1)))
        .with_interval((timeout / 6).max(Duration::from_secs(1)))
        .with_retries(3);
    socket.set_tcp_keepalive(&keepalive)?;
    socket.set_tcp_user_timeout(Some(timeout))
}

/// An error of process `me` while connecting.
fn fail(me: usize, msg: String) -> Error {
    Error::Cluster(format!("process {me}: {msg}"))
}

/// Connects to process `i` (one before this one) at `peer`, retrying until `deadline`, and
/// runs the client's side of the handshake.
fn connect_to(cluster: &Cluster, i: usize, peer: &str, deadline: Instant) -> Result<TcpStream> {
    let (me, n) = (cluster.process, cluster.hosts.len());
    let stream = loop {
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
    handshake::client(
        &mut Deadlined::new(&stream, HANDSHAKE_TIMEOUT),
        &cluster.secret,
        me,
        i,
        n,
    )
    .map_err(|e| {
        fail(
            me,
            format!("the handshake with process {i} at {peer} failed: {e}"),
        )
    })?;
    stream.set_read_timeout(None).map_err(io)?;
    stream.set_write_timeout(None).map_err(io)?;
    Ok(stream)
}

/// What a handshake thread reports: the connection's address and, when it proved the job's
/// secret, the peer's process index with its stream.
type Handshaken = (SocketAddr, std::result::Result<(usize, TcpStream), String>);

/// Accepts the processes after this one until each has connected and proved the job's
/// secret, or `deadline` passes. Each accepted connection's handshake runs on a thread of its
/// own (at most [`MAX_PENDING_HANDSHAKES`] at once), so a slow or silent stranger delays no
/// one; strangers are refused and reported on stderr.
fn accept_peers(
    cluster: &Cluster,
    listener: &TcpListener,
    sockets: &mut [Option<TcpStream>],
    deadline: Instant,
) -> Result<()> {
    let (me, n) = (cluster.process, cluster.hosts.len());
    let address = &cluster.hosts[me];
    let (done, results) = std::sync::mpsc::channel::<Handshaken>();
    let mut pending = 0usize;
    while sockets.iter().skip(me + 1).any(Option::is_none) {
        let mut idle = true;
        while let Ok((from, result)) = results.try_recv() {
            idle = false;
            pending -= 1;
            match result {
                Ok((id, _)) if sockets[id].is_some() => {
                    return Err(fail(me, format!(
                        "{from} proved the job secret as process {id}, which is already connected: are two processes started with --process {id}?"
                    )));
                }
                Ok((id, stream)) => sockets[id] = Some(stream),
                // A stranger (or a process of another job): refused, keep waiting.
                Err(why) => eprintln!("process {me}: refused a connection from {from}: {why}"),
            }
        }
        match listener.accept() {
            Ok((stream, from)) if pending >= MAX_PENDING_HANDSHAKES => {
                idle = false;
                eprintln!("process {me}: closed a connection from {from}: {MAX_PENDING_HANDSHAKES} handshakes are under way");
                drop(stream);
            }
            Ok((stream, from)) => {
                idle = false;
                pending += 1;
                let (done, secret) = (done.clone(), cluster.secret.clone());
                let spawned = std::thread::Builder::new()
                    .name(format!("handshake {from}"))
                    .spawn(move || {
                        let result = accept_one(stream, &secret, me, n);
                        // The receiver is gone once every peer is in: nothing to report then.
                        let _ = done.send((from, result));
                    });
                if let Err(e) = spawned {
                    return Err(fail(me, format!("starting a handshake thread: {e}")));
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(e) => return Err(fail(me, format!("accepting on {address}: {e}"))),
        }
        if Instant::now() >= deadline {
            let missing: Vec<usize> = (me + 1..n).filter(|i| sockets[*i].is_none()).collect();
            return Err(fail(
                me,
                format!(
                    "processes {missing:?} did not connect to {address} within {CONNECT_TIMEOUT:?}"
                ),
            ));
        }
        if idle {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    Ok(())
}

/// The server's side of the handshake on one accepted connection, within
/// [`HANDSHAKE_TIMEOUT`] in all: the peer's process index and its stream, or why it was
/// refused.
fn accept_one(
    stream: TcpStream,
    secret: &JobSecret,
    me: usize,
    n: usize,
) -> std::result::Result<(usize, TcpStream), String> {
    let io = |e: std::io::Error| e.to_string();
    stream.set_nonblocking(false).map_err(io)?;
    stream.set_nodelay(true).map_err(io)?;
    let id = handshake::server(
        &mut Deadlined::new(&stream, HANDSHAKE_TIMEOUT),
        secret,
        me,
        n,
    )
    .map_err(|why| why.to_string())?;
    stream.set_read_timeout(None).map_err(io)?;
    stream.set_write_timeout(None).map_err(io)?;
    Ok((id, stream))
}

/// A stream whose reads and writes all end by one deadline: before each, the socket's
/// timeouts are set to the time left, and none is left is an error (`TimedOut`). A peer that
/// sends one byte at a time cannot stretch the handshake past the deadline.
struct Deadlined<'a> {
    stream: &'a TcpStream,
    until: Instant,
}

impl<'a> Deadlined<'a> {
    fn new(stream: &'a TcpStream, timeout: Duration) -> Self {
        Deadlined {
            stream,
            until: Instant::now() + timeout,
        }
    }

    /// The time left, or a `TimedOut` error when there is none.
    fn left(&self) -> std::io::Result<Duration> {
        match self.until.checked_duration_since(Instant::now()) {
            Some(left) if !left.is_zero() => Ok(left),
            _ => Err(std::io::Error::new(
                ErrorKind::TimedOut,
                "the handshake took longer than its deadline",
            )),
        }
    }
}

impl Read for Deadlined<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.stream.set_read_timeout(Some(self.left()?))?;
        self.stream.read(buf)
    }
}

impl Write for Deadlined<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.stream.set_write_timeout(Some(self.left()?))?;
        self.stream.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let mut stream = self.stream;
        stream.flush()
    }
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
