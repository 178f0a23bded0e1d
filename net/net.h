/*
 * The transport of `shardpsi server` and `shardpsi client`: one TCP connection carrying
 * length-framed messages, with a liveness timeout and keepalives.
 *
 * A frame is a 9-byte header, the type (1 byte) and the payload length
 * (8 bytes, big-endian), then the payload.  The receiver names the type it
 * expects and the largest payload it accepts; the header is checked against
 * both before anything is allocated.  Two types are handled here, in every
 * receive (and while sending, see below):
 *  - PSI_NET_FRAME_KEEPALIVE (empty payload; a non-empty one is an error):
 *    skipped.  A side sends them while it computes, so that the peer's
 *    timeout measures silence of the peer process, not its work.
 *  - PSI_NET_FRAME_ERROR (payload: a UTF-8 message, at most
 *    PSI_NET_MSG_MAX bytes): the peer gave up; the receive fails with
 *    PSI_NET_EPEER and the message (escaped as psi_net_escape does).
 *
 * Timeout: an operation fails with PSI_NET_ETIMEOUT when no byte has
 * moved in either direction for timeout_ms.  While a send waits for the
 * socket to drain, it also reads and handles frames arriving from the peer
 * (keepalives; an ERROR frame fails the send with PSI_NET_EPEER; any
 * other frame is kept in the receive buffer for the next psi_net_recv),
 * so a peer that is busy computing and sending keepalives while we push a
 * large message to it is not mistaken for a dead one, and the two sides can
 * never deadlock on full socket buffers with keepalives alone.
 *
 * A broken connection: when a send fails after part of its frame went out,
 * when a keepalive fails, and after psi_net_send_error, c->broken is
 * set, and every later psi_net_send / _recv returns c->broken_code at
 * once (c->err keeps the message of the failure).
 *
 * All sends use MSG_NOSIGNAL: a closed peer is an error, never SIGPIPE.
 * Payloads move in slices of at most 1 MiB per system call; the receive
 * buffer holds at most 64 KiB (headers, keepalives, ERROR messages, and
 * the first bytes of a payload read along with its header).
 * Not thread-safe, except psi_net_keepalive, which may be called from
 * another thread while the owning thread is not using the connection (and
 * never from two threads at once); what it writes into *c (broken, err) is
 * seen by the owner after whatever synchronisation ends the computation
 * that called it (a thread join, a mutex).
 */
#ifndef PSI_NET_H
#define PSI_NET_H

#include <stddef.h>
#include <stdint.h>

/* Frame types of protocol version 1 (the handshake is in net_session.h). */
enum {
    PSI_NET_FRAME_HELLO = 1,     // client -> server
    PSI_NET_FRAME_ACCEPT = 2,    // server -> client
    PSI_NET_FRAME_SETUP = 3,     // server -> client: ServerSetup bytes
    PSI_NET_FRAME_REQUEST = 4,   // client -> server: Request bytes
    PSI_NET_FRAME_RESPONSE = 5,  // server -> client: Response bytes
    PSI_NET_FRAME_PERM = 6,      // server -> client: association permutation
    PSI_NET_FRAME_DONE = 7,      // client -> server: result received
    PSI_NET_FRAME_ERROR = 8,     // either way: the sender gives up, with a message
    PSI_NET_FRAME_KEEPALIVE = 9, // either way: still working
    PSI_NET_FRAME_PAYLOAD_HEAD = 10, // server -> client: L and the payload columns
    PSI_NET_FRAME_PAYLOADS = 11, // server -> client: the payload table
    PSI_NET_FRAME_RESULT = 12    // client -> server: the matched setup positions
};
/** The largest frame type. */
#define PSI_NET_FRAME_LAST PSI_NET_FRAME_RESULT

#define PSI_NET_HEADER_BYTES 9
/** Longest ERROR message, and longest handshake payload. */
#define PSI_NET_MSG_MAX 1024

/* Errors (a message is always left in conn->err). */
#define PSI_NET_OK 0
#define PSI_NET_EADDR (-1)      // HOST:PORT malformed, or host not found
#define PSI_NET_ECONNECT (-2)   // connect failed: refused, unreachable
#define PSI_NET_ELISTEN (-3)    // bind or listen failed (address in use...)
#define PSI_NET_ETIMEOUT (-4)   // nothing moved for timeout_ms
#define PSI_NET_ECLOSED (-5)    // the peer closed or reset the connection
#define PSI_NET_EIO (-6)        // another socket error
#define PSI_NET_EFRAME (-7)     // unexpected type, payload above the bound,
                                    // a bad keepalive or error frame
#define PSI_NET_EPEER (-8)      // the peer sent an ERROR frame
#define PSI_NET_ENOMEM (-9)     // the payload could not be allocated
#define PSI_NET_ETLS (-10)      // TLS (net_tls.h): an identity was refused, by
                                    // us or by the peer, or TLS failed
#define PSI_NET_EINTEGRITY (-11) // TLS: a record failed its integrity check
                                    // (bytes were changed on the path)
#define PSI_NET_EFILE (-12)     // the file a frame is sent from or received
                                    // into could not be read or written

/** Progress of a transfer: bytes of the current frame's payload done of total. */
typedef void (*psi_net_progress_fn)(void *arg, uint64_t done, uint64_t total);

typedef struct psi_net_conn {
    int fd;                     // -1 when closed
    int timeout_ms;             // > 0
    char peer[128];             // "HOST:PORT" of the other end, for messages
    char err[PSI_NET_MSG_MAX + 160]; // the last error's message
    // receive buffer: bytes read from the socket but not yet consumed
    uint8_t *rx;
    size_t rx_len, rx_cap;
    // keepalive bookkeeping (psi_net_keepalive)
    double last_keepalive_ms;
    int broken;                 // the stream is unusable (see the top comment)
    int broken_code;            // what send and recv return when broken
    // TLS (net_tls.h): the SSL * of the connection once
    // psi_net_tls_handshake succeeded, NULL for plain TCP; every byte of the
    // frames then goes through it
    void *tls;
    unsigned tls_flags;         // the I/O layer's TLS state (net_io.c); 0 at first
    // the peer's identity, set by psi_net_tls_handshake ("CN=..., key
    // sha256:..."); "" on a plain connection
    char peer_id[200];
    // an absolute psi_app_now_ms() time (0: none): once it has passed, every
    // send, receive and TLS handshake fails with PSI_NET_ETIMEOUT, however
    // many bytes (keepalives among them) are moving
    double deadline_ms;
    // set: a KEEPALIVE frame received fails the receive (or the send that
    // read it) with PSI_NET_EFRAME; for the time before the handshake has
    // been accepted, when a peer has no business being busy
    int no_keepalive;
    // set: called by a computation's progress (net_progress.h) when the
    // peer has closed its side of the connection (psi_net_peer_gone) while
    // this side computes for it, with gone_arg, from the computing thread;
    // it is expected not to return (the process ends there)
    void (*gone)(void *arg);
    void *gone_arg;
} psi_net_conn;

/** Copies the text s (len bytes, not NUL-terminated) into out for showing on
 *  a terminal: printable UTF-8 passes through; C0 controls, DEL and bytes
 *  that are not valid UTF-8 become \xNN; C1 controls (U+0080-U+009F) and
 *  the format characters that change how text is shown (U+061C,
 *  U+200B-U+200F, U+202A-U+202E, U+2066-U+2069, U+FEFF) become \u{XXXX};
 *  a backslash becomes \\.  out is always NUL-terminated (cap > 0), cut
 *  before an escape or character that does not fit whole. */
void psi_net_escape(char *out, size_t cap, const uint8_t *s, size_t len);

/** Parses "HOST:PORT" ("[v6addr]:PORT" for IPv6; PORT 0-65535; HOST may be
 *  a name).  Returns: 0, or PSI_NET_EADDR with a message in err.
 *  Out: host (NUL-terminated, brackets removed), port. */
int psi_net_parse_addr(char *host, size_t host_cap, char *port, size_t port_cap,
                           const char *hostport, char *err, size_t err_len);

/** Binds and listens on HOST:PORT (SO_REUSEADDR; PORT 0 picks a free port).
 *  Returns: 0 or PSI_NET_EADDR / _ELISTEN with a message in err.
 *  Out: *fd; bound, the actual "HOST:PORT" (with the chosen port). */
int psi_net_listen(int *fd, char *bound, size_t bound_cap, const char *hostport,
                       char *err, size_t err_len);

/** Waits (without a timeout) for one connection on listening socket lfd.
 *  Returns: 0 or PSI_NET_EIO (EINTR is retried).  Out: *c (all of it
 *  set; nothing needs initialising before), an open non-blocking
 *  connection with TCP_NODELAY, c->peer the numeric "HOST:PORT" of the
 *  client and timeout_ms as given. */
int psi_net_accept(psi_net_conn *c, int lfd, int timeout_ms);

/** Connects to HOST:PORT, trying every address getaddrinfo gives, each for
 *  at most timeout_ms; the error is that of the last address tried
 *  ("cannot connect to HOST:PORT: Connection refused").  Returns: 0 or
 *  PSI_NET_EADDR / _ECONNECT / _ETIMEOUT.  Out: *c as for
 *  psi_net_accept, c->peer the numeric address connected to (c->fd = -1
 *  and the message in c->err on failure; psi_net_close is then a no-op). */
int psi_net_connect(psi_net_conn *c, const char *hostport, int timeout_ms);

/** Sends one frame (see the timeout rule above).  type is sent as given
 *  (one byte), so tests can send invalid ones.  progress may be NULL; it is
 *  called as payload bytes go out (at most every 1 MiB) and at the end.
 *  When the peer closes the connection after sending an ERROR frame, the
 *  send fails with _EPEER and its message, not with _ECLOSED.
 *  Returns: 0 or _ETIMEOUT / _ECLOSED / _EIO / _EPEER / _EFRAME (a bad
 *  frame from the peer), or c->broken_code. */
int psi_net_send(psi_net_conn *c, int type, const uint8_t *payload, size_t len,
                     psi_net_progress_fn progress, void *progress_arg);

/** psi_net_send of a payload in a file: the first len bytes of fd, read
 *  with pread in slices of 1 MiB (the descriptor's offset is not used or
 *  moved), so a message of any size goes out through 1 MiB of memory.
 *  Returns: as psi_net_send, or PSI_NET_EFILE when fd cannot be read (or
 *  holds fewer bytes), the connection then broken if the header went out. */
int psi_net_send_fd(psi_net_conn *c, int type, int fd, uint64_t len,
                    psi_net_progress_fn progress, void *progress_arg);

/** psi_net_send_fd of the len bytes of fd at offset `at` (a message after
 *  the header line of a payload file, say).  Returns: as psi_net_send_fd. */
int psi_net_send_fd_at(psi_net_conn *c, int type, int fd, uint64_t at, uint64_t len,
                       psi_net_progress_fn progress, void *progress_arg);

/** Receives the next frame, which must be of type `expect` with a payload of
 *  at most max_len bytes (keepalives skipped, ERROR frames reported as
 *  above).  The header is checked before allocating: another type gives
 *  PSI_NET_EFRAME ("expected a <name> frame, got a <name> frame"), a
 *  longer payload gives PSI_NET_EFRAME ("<name> frame of N bytes is
 *  larger than the limit M").  The payload's buffer starts at 1 MiB (or the
 *  payload's length, if smaller) and doubles as bytes arrive: a header
 *  claiming more than the peer then sends costs at most twice what it sent.
 *  progress as for psi_net_send.
 *  Returns: 0 or an error above.  Out: *payload (malloc'd, at least 1 byte,
 *  freed by the caller; NULL on failure), *len. */
int psi_net_recv(psi_net_conn *c, int expect, size_t max_len, uint8_t **payload,
                     size_t *len, psi_net_progress_fn progress, void *progress_arg);

/** psi_net_recv into a file: the payload is written to fd (at its offset,
 *  with write) as it arrives, through 1 MiB of memory whatever its length;
 *  the header is checked against expect and max_len first, as there.  The
 *  disk it takes grows with the bytes the peer actually sends.
 *  Returns: as psi_net_recv, or PSI_NET_EFILE when fd cannot be written
 *  (a full disk, say; fd then holds a prefix).  Out: *len, the payload's
 *  length (0 on failure). */
int psi_net_recv_fd(psi_net_conn *c, int expect, uint64_t max_len, int fd, uint64_t *len,
                    psi_net_progress_fn progress, void *progress_arg);

/** Sends a keepalive frame if at least interval_ms have passed since the
 *  last one (or since the connection opened).  Meant for a computation's
 *  progress callback: never reads, and never blocks longer than timeout_ms
 *  (it waits only when the socket buffer is full).  It writes the whole
 *  9-byte frame or marks the connection broken: a failure (_ECLOSED, _EIO,
 *  or _ETIMEOUT when the peer took no byte for timeout_ms) sets c->broken,
 *  c->broken_code and c->err instead of being returned.  Does nothing on a
 *  closed or broken connection.  Never call it while a send or receive on
 *  c is under way (from their progress callbacks, say): its frame would
 *  land inside theirs.  Thread-safety: see the header comment. */
void psi_net_keepalive(psi_net_conn *c, int interval_ms);

/** Sends an ERROR frame with `msg` (truncated to PSI_NET_MSG_MAX bytes,
 *  not inside a UTF-8 sequence), best effort: at most one second writing,
 *  errors ignored, and no frame at all on a broken connection (it would be
 *  misread after a partial one).  Then it shuts down our sending side and
 *  reads and discards whatever the peer still sends, until the peer closes
 *  or another second has passed: closing a socket with unread received
 *  bytes makes the kernel reset the connection, which drops our own bytes
 *  not yet transmitted, the ERROR frame among them.  Afterwards the
 *  connection is broken (PSI_NET_EIO) and only good for
 *  psi_net_close.  c->err is left as it was, so msg may be c->err. */
void psi_net_send_error(psi_net_conn *c, const char *msg);

/** Returns: a frame type's name for messages ("setup", "keepalive", ...). */
const char *psi_net_frame_name(int type);

/** Closes the connection and frees its buffer; safe on a closed one (fd -1,
 *  as after a failed connect or a previous close).  c->err is kept.  After
 *  a clean end of the protocol nothing is left unread and this is a plain
 *  close().  If unread bytes are found (a peer still sending), it first
 *  shuts down our side and discards incoming bytes until the peer closes,
 *  for at most 200 ms, for the reason given at psi_net_send_error. */
void psi_net_close(psi_net_conn *c);

#endif /* PSI_NET_H */
