//! Mutual authentication of the processes of a multi-process job, before a socket is handed
//! to timely.
//!
//! # Threat model
//!
//! Every process of a job knows one shared secret (see [`JobSecret`]); a process that does not
//! know it must not get a single batch into the job. Before a connection carries any data, the
//! connecting process (the *client*, the one with the higher index) and the listening process
//! (the *server*) run a challenge-response handshake with HMAC-SHA-256 keyed by the secret:
//!
//! ```text
//! client -> server  hello:     "TYPEINFOJOB1" | client index u32 BE | processes u32 BE | client nonce [32]
//! server -> client  challenge: "TYPEINFOJOB1" | server index u32 BE | server nonce [32]
//!                              | HMAC(secret, "server" | transcript) [32]
//! client -> server  response:  HMAC(secret, "client" | transcript) [32]
//! server -> client  verdict:   0x01 (accepted)
//! transcript = "TYPEINFOJOB1" | client index | server index | processes | client nonce | server nonce
//! ```
//!
//! Each side proves knowledge of the secret over a fresh random nonce chosen by the other
//! side, so a recorded handshake cannot be replayed, and the labels `server`/`client` keep one
//! side's proof from being reflected as the other's. The indices and the number of processes
//! are inside the MAC, so an authenticated connection cannot be redirected to another slot.
//! MACs are compared in constant time (`hmac`'s `verify_slice`).
//!
//! What this does **not** do: the traffic after the handshake is neither encrypted nor
//! integrity-protected per batch. Someone who can read or rewrite packets on the path (not
//! merely connect to a port) can read records and tamper with an established connection. On
//! a network you do not trust, run the job's processes over an encrypted, authenticated
//! transport (a VPN such as WireGuard, or an SSH or TLS tunnel between the hosts) and keep the
//! secret out of command lines, logs and images (the runtime reads it only from the
//! environment or a file).
//!
//! A server refuses a connection that fails the handshake (wrong secret, garbage, a replay, a
//! process of a job with another shape), says so on stderr, and goes on waiting for its real
//! peers: a stranger cannot disturb the job. A client whose server fails to prove the secret
//! stops with an error that names the address.

use std::fmt;
use std::io::{Read, Write};

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

pub use crate::config::secret::{JobSecret, MIN_SECRET_LEN, SECRET_ENV, SECRET_FILE_ENV};

const MAGIC: &[u8; 12] = b"TYPEINFOJOB1";

const NONCE: usize = 32;

const MAC: usize = 32;

const ACCEPTED: u8 = 1;

/// Why a handshake failed.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// The socket failed or timed out.
    Io(std::io::Error),
    /// The peer sent something that is no handshake of this protocol.
    Garbage(String),
    /// The peer does not know the secret (or replayed an old handshake).
    BadProof,
    /// The peer knows the secret but belongs elsewhere (another process count or index).
    Mismatch(String),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Io(e) => write!(f, "{e}"),
            Refusal::Garbage(what) => write!(f, "not a handshake of this job: {what}"),
            Refusal::BadProof => f.write_str(
                "it did not prove that it knows the job secret (a wrong secret or a replayed handshake)",
            ),
            Refusal::Mismatch(what) => write!(f, "{what}"),
        }
    }
}

/// HMAC-SHA-256 keyed by the job's secret over `label | transcript`.
fn mac(
    secret: &JobSecret,
    label: &[u8],
    transcript: &[u8],
) -> std::result::Result<Hmac<Sha256>, Refusal> {
    // HMAC accepts keys of every length (long keys are hashed, short ones padded), so
    // this error cannot happen; it is still an error, not a panic.
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret.as_bytes())
        .map_err(|e| Refusal::Garbage(format!("the job secret is no HMAC key: {e}")))?;
    mac.update(label);
    mac.update(transcript);
    Ok(mac)
}

impl From<std::io::Error> for Refusal {
    fn from(e: std::io::Error) -> Self {
        Refusal::Io(e)
    }
}

fn nonce() -> std::result::Result<[u8; NONCE], Refusal> {
    let mut nonce = [0u8; NONCE];
    getrandom::fill(&mut nonce)
        .map_err(|e| Refusal::Io(std::io::Error::other(format!("no random nonce: {e}"))))?;
    Ok(nonce)
}

fn transcript(
    client: u32,
    server: u32,
    processes: u32,
    client_nonce: &[u8; NONCE],
    server_nonce: &[u8; NONCE],
) -> Vec<u8> {
    let mut t = Vec::with_capacity(MAGIC.len() + 12 + 2 * NONCE);
    t.extend_from_slice(MAGIC);
    t.extend_from_slice(&client.to_be_bytes());
    t.extend_from_slice(&server.to_be_bytes());
    t.extend_from_slice(&processes.to_be_bytes());
    t.extend_from_slice(client_nonce);
    t.extend_from_slice(server_nonce);
    t
}

fn read_u32(stream: &mut impl Read) -> std::result::Result<u32, Refusal> {
    let mut b = [0u8; 4];
    stream.read_exact(&mut b)?;
    Ok(u32::from_be_bytes(b))
}

fn read_magic(stream: &mut impl Read) -> std::result::Result<(), Refusal> {
    let mut magic = [0u8; MAGIC.len()];
    stream.read_exact(&mut magic)?;
    if &magic != MAGIC {
        return Err(Refusal::Garbage(format!(
            "it began with {:02x?} instead of \"TYPEINFOJOB1\"",
            &magic[..]
        )));
    }
    Ok(())
}

fn index(i: usize) -> std::result::Result<u32, Refusal> {
    u32::try_from(i).map_err(|_| Refusal::Mismatch(format!("process index {i} is too large")))
}

/// The connecting side: process `me` of `processes` proves itself to process `peer` and
/// checks that `peer` knows the secret too.
pub(crate) fn client(
    stream: &mut (impl Read + Write),
    secret: &JobSecret,
    me: usize,
    peer: usize,
    processes: usize,
) -> std::result::Result<(), Refusal> {
    let (me, peer, processes) = (index(me)?, index(peer)?, index(processes)?);
    let client_nonce = nonce()?;
    let mut hello = Vec::with_capacity(MAGIC.len() + 8 + NONCE);
    hello.extend_from_slice(MAGIC);
    hello.extend_from_slice(&me.to_be_bytes());
    hello.extend_from_slice(&processes.to_be_bytes());
    hello.extend_from_slice(&client_nonce);
    stream.write_all(&hello)?;
    stream.flush()?;

    read_magic(stream)?;
    let server = read_u32(stream)?;
    let mut server_nonce = [0u8; NONCE];
    stream.read_exact(&mut server_nonce)?;
    let mut server_proof = [0u8; MAC];
    stream.read_exact(&mut server_proof)?;
    let t = transcript(me, server, processes, &client_nonce, &server_nonce);
    mac(secret, b"server", &t)?
        .verify_slice(&server_proof)
        .map_err(|_| Refusal::BadProof)?;
    if server != peer {
        return Err(Refusal::Mismatch(format!(
            "it is process {server} of the job, not process {peer}"
        )));
    }
    let proof = mac(secret, b"client", &t)?.finalize().into_bytes();
    stream.write_all(&proof)?;
    stream.flush()?;
    let mut verdict = [0u8; 1];
    stream.read_exact(&mut verdict).map_err(|e| {
        Refusal::Io(std::io::Error::new(
            e.kind(),
            format!("the peer closed the connection instead of accepting it ({e}): does it have another job secret or process count?"),
        ))
    })?;
    if verdict[0] != ACCEPTED {
        return Err(Refusal::Garbage(format!(
            "verdict byte {:#04x}",
            verdict[0]
        )));
    }
    Ok(())
}

/// The listening side: process `me` of `processes` checks that the connecting process knows
/// the secret, proves that it knows it too, and returns the connecting process's index (one
/// after `me`).
pub(crate) fn server(
    stream: &mut (impl Read + Write),
    secret: &JobSecret,
    me: usize,
    processes: usize,
) -> std::result::Result<usize, Refusal> {
    let (me, processes) = (index(me)?, index(processes)?);
    read_magic(stream)?;
    let client = read_u32(stream)?;
    let their_processes = read_u32(stream)?;
    let mut client_nonce = [0u8; NONCE];
    stream.read_exact(&mut client_nonce)?;
    let server_nonce = nonce()?;
    let t = transcript(client, me, their_processes, &client_nonce, &server_nonce);
    let proof = mac(secret, b"server", &t)?.finalize().into_bytes();
    let mut challenge = Vec::with_capacity(MAGIC.len() + 4 + NONCE + MAC);
    challenge.extend_from_slice(MAGIC);
    challenge.extend_from_slice(&me.to_be_bytes());
    challenge.extend_from_slice(&server_nonce);
    challenge.extend_from_slice(&proof);
    stream.write_all(&challenge)?;
    stream.flush()?;

    let mut client_proof = [0u8; MAC];
    stream.read_exact(&mut client_proof)?;
    mac(secret, b"client", &t)?
        .verify_slice(&client_proof)
        .map_err(|_| Refusal::BadProof)?;
    if their_processes != processes {
        return Err(Refusal::Mismatch(format!(
            "it belongs to a job of {their_processes} processes, this one has {processes}"
        )));
    }
    if client <= me || client >= processes {
        return Err(Refusal::Mismatch(format!(
            "it announced itself as process {client}, which does not connect to process {me}"
        )));
    }
    stream.write_all(&[ACCEPTED])?;
    stream.flush()?;
    Ok(client as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;
    use std::net::{TcpListener, TcpStream};

    fn secret(s: &str) -> JobSecret {
        JobSecret::new(s.as_bytes().to_vec()).unwrap()
    }

    /// Runs a client against a server on loopback; returns both results.
    fn pair(
        client_secret: &str,
        server_secret: &str,
        (me, peer, processes): (usize, usize, usize),
        server_processes: usize,
    ) -> (
        std::result::Result<(), Refusal>,
        std::result::Result<usize, Refusal>,
    ) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let server_secret = secret(server_secret);
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
                .unwrap();
            server(&mut s, &server_secret, peer, server_processes)
        });
        let mut c = TcpStream::connect(address).unwrap();
        c.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let client_result = client(&mut c, &secret(client_secret), me, peer, processes);
        drop(c);
        (client_result, server.join().unwrap())
    }

    const S: &str = "sixteen bytes at least, shared";

    #[test]
    fn processes_that_share_the_secret_accept_each_other() {
        let (c, s) = pair(S, S, (2, 0, 3), 3);
        assert!(c.is_ok(), "{c:?}");
        assert_eq!(s.unwrap(), 2);
    }

    #[test]
    fn a_wrong_secret_is_refused_on_both_sides() {
        let (c, s) = pair("another secret, long enough", S, (1, 0, 2), 2);
        assert!(matches!(c, Err(Refusal::BadProof)), "{c:?}");
        assert!(s.is_err(), "{s:?}");
    }

    #[test]
    fn a_process_of_another_job_shape_is_refused() {
        let (_, s) = pair(S, S, (1, 0, 3), 2);
        assert!(matches!(s, Err(Refusal::Mismatch(_))), "{s:?}");
        let (c, _) = pair(S, S, (1, 0, 2), 2);
        assert!(c.is_ok());
    }

    #[test]
    fn a_server_at_another_index_is_refused_by_the_client() {
        // The client expects process 1, but process 0 answers.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let _ = server(&mut s, &secret(S), 0, 3);
        });
        let mut c = TcpStream::connect(address).unwrap();
        let r = client(&mut c, &secret(S), 2, 1, 3);
        assert!(matches!(r, Err(Refusal::Mismatch(_))), "{r:?}");
        drop(c);
        t.join().unwrap();
    }

    #[test]
    fn garbage_is_refused() {
        let mut garbage = Cursor::new(vec![0x47u8; 200]);
        let r = server(&mut garbage, &secret(S), 0, 2);
        assert!(matches!(r, Err(Refusal::Garbage(_))), "{r:?}");
        let mut short = Cursor::new(b"TYPEINFOJOB1\0".to_vec());
        assert!(matches!(
            server(&mut short, &secret(S), 0, 2),
            Err(Refusal::Io(_))
        ));
    }

    /// A stream that replays recorded input and records output.
    struct Recorder {
        input: Cursor<Vec<u8>>,
        output: Vec<u8>,
    }
    impl Read for Recorder {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.input.read(buf)
        }
    }
    impl Write for Recorder {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.output.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_replayed_handshake_is_refused() {
        // Record everything a real client sent in an accepted handshake.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let recorded = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut sent = Vec::new();
            // hello, then the client's proof after the challenge.
            let mut hello = vec![0u8; MAGIC.len() + 8 + NONCE];
            s.read_exact(&mut hello).unwrap();
            sent.extend_from_slice(&hello);
            let mut rec = Recorder {
                input: Cursor::new(hello),
                output: Vec::new(),
            };
            // Answer as a real server would, through a recorder, then forward.
            let _ = server(&mut rec, &secret(S), 0, 2);
            s.write_all(&rec.output).unwrap();
            let mut proof = [0u8; MAC];
            s.read_exact(&mut proof).unwrap();
            sent.extend_from_slice(&proof);
            sent
        });
        let mut c = TcpStream::connect(address).unwrap();
        c.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let _ = client(&mut c, &secret(S), 1, 0, 2);
        drop(c);
        let sent = recorded.join().unwrap();
        assert_eq!(sent.len(), MAGIC.len() + 8 + NONCE + MAC);
        // Replay it against a fresh server: its new nonce makes the old proof worthless.
        let mut replay = Recorder {
            input: Cursor::new(sent),
            output: Vec::new(),
        };
        let r = server(&mut replay, &secret(S), 0, 2);
        assert!(matches!(r, Err(Refusal::BadProof)), "{r:?}");
    }

    #[test]
    fn secrets_are_read_from_a_file_and_never_printed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret");
        std::fs::write(&path, "0123456789abcdef0123\n").unwrap();
        let s = JobSecret::from_file(&path).unwrap();
        assert_eq!(s, secret("0123456789abcdef0123"));
        assert!(!format!("{s:?}").contains("0123"));
        std::fs::write(&path, "short\n").unwrap();
        assert!(JobSecret::from_file(&path).is_err());
        assert!(JobSecret::from_file(&dir.path().join("missing")).is_err());
    }
}
