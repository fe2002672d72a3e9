//! Waiting connections held without a task each: one task per server (the lot's) holds every
//! connection that has nothing to do until something wakes it, and gives it a task of its own
//! again when it has.
//!
//! Why: an idle reader's connection, once its subscription is handed to its stream's writer
//! task, waits for a few rare things (the writer giving the subscription back, the client's
//! end-of-file, its keep-alive). A tokio task for that wait is the waiting state plus about 150
//! bytes of tokio's own, laid out in 256 (tokio's task is a multiple of 128 bytes on x86_64);
//! here the state sits in a slot of a shared table (120 bytes). Measured with 10,000 idle
//! readers, RSS per reader went from 1.83 to 1.60 KiB (docs/server.md, "Memory per reader and
//! per stream").
//!
//! A parked connection's socket is not registered with tokio either (tokio's record of a
//! descriptor is 256 bytes): the lot has its own poller, an epoll instance registered with tokio
//! as one descriptor, which watches every parked value's descriptor ([`Waiting::fd`]) and tells
//! the value what it saw ([`Io`]); a value's task registers its descriptor with tokio again when
//! it goes on. With it, 10,000 idle readers went from 1.36 to 0.95 KiB each.
//!
//! A task that ends while its connection is parked must leave no waker of its own behind: a
//! waker keeps its whole task in memory, a finished one too (the connection's eviction wait did,
//! until `Admitted::head_read` let go of it; parked, every waker the connection registers is its
//! slot's).
//!
//! How: a parked value is polled by the lot's task with a waker that names its slot. The waker
//! is two numbers (the lot and the slot) in the waker's data word, looked up in a table of live
//! lots when it wakes: no allocation per parked value, and a waker that outlives its lot or its
//! slot wakes nothing or polls a value that is not ready (which is harmless: a poll re-checks
//! everything the value waits for). A `std::task::Wake` of its own per parked value would cost
//! 48 bytes each; tokio offers no task-less wait.
//!
//! Guarantees:
//! - A parked value is polled once when it arrives (with its slot's waker, so a wake-up that
//!   came between its last poll on its own task and its arrival is not lost: what it waits for
//!   are flags and readiness that stay set), and again after each wake-up of its slot, until it
//!   is ready: then it is taken out and either goes on ([`Waiting::go_on`]) or is dropped.
//! - The lot's task yields after each pass (so tokio's budget is never spent in a loop), and
//!   ends once no handle to the lot is left and nothing is parked or on its way.
//! - A lot's task that is dropped (its runtime shut down) drops what is parked and what was on
//!   its way.
//! - A client cannot grow the lot: it holds a slot per parked connection (which the connection
//!   limits bound) and at most twice as many timer entries, and 64 more.
//! - A parked value's descriptor is watched from its arrival until it leaves (taken out of the
//!   poller before it goes on or is dropped); an edge that came for an earlier value of the same
//!   slot is known by the slot's use and ignored. A value whose descriptor cannot be watched is
//!   dropped at once (with a warning): unwatched, it would never hear its peer go.
//! - The poller's events are taken at most [`EVENTS_PER_PASS`] per pass, then the lot yields.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::future::Future;
use std::io;
use std::os::fd::RawFd;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

use futures::task::AtomicWaker;
use mio::unix::SourceFd;
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::time::{Instant, Sleep};
use twoplane_runtime::lock;

use crate::deadline::poll_deadline;

/// Something that waits in a lot: polled with its slot's waker until it is ready.
pub(crate) trait Waiting: Send + 'static {
    /// Ready with true to go on ([`Waiting::go_on`]), with false to be dropped. `io`: what the
    /// lot's poller saw on the value's descriptor ([`Waiting::fd`]) since the last poll.
    fn poll_wait(&mut self, cx: &mut Context<'_>, io: Io) -> Poll<bool>;
    /// Go on with a task of its own.
    fn go_on(self);
    /// When it must be polled again even if nothing wakes it (a reader's next keep-alive): the
    /// lot keeps one timer for all of them. Asked after each poll that leaves it parked.
    fn due(&self) -> Option<Instant> {
        None
    }
    /// A descriptor for the lot to watch while the value is parked (asked once, on arrival; it
    /// must stay open while the value is parked): its edges come to [`Waiting::poll_wait`] as
    /// [`Io`].
    fn fd(&self) -> Option<RawFd> {
        None
    }
}

/// What the lot's poller saw on a parked value's descriptor since its last poll: edges, as
/// epoll's edge-triggered mode reports them (a value that is told `readable` reads until the
/// descriptor would block, or it hears of no more bytes until new ones come).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Io {
    /// Bytes, the peer's end-of-file or an error may be there to read.
    pub readable: bool,
    /// Room came (after a write met `EAGAIN`), or an error.
    pub writable: bool,
}

/// The handle a server parks with; the lot's task ends once the last handle is gone and the lot
/// is empty.
pub(crate) struct Parking<T: Waiting> {
    lot: Arc<Lot<T>>,
}

struct Lot<T> {
    id: u32,
    inbox: Mutex<Inbox<T>>,
    task: AtomicWaker,
}

struct Inbox<T> {
    arrived: Vec<T>,
    woken: Vec<u32>,
}

impl<T: Waiting> Parking<T> {
    /// A new lot, its task spawned on the current runtime (an error: the lot's poller could not
    /// be made or registered with tokio, say for want of descriptors).
    pub fn start() -> io::Result<Parking<T>> {
        // SAFETY: the poll owns its descriptor, open for as long as it lives, and the
        // registration is part of it (`AsyncFd` owns the poll).
        let poller = unsafe { AsyncFd::register_with_interest(mio::Poll::new()?, Interest::READABLE) }
            .map_err(|e| e.into_parts().1)?;
        let id = NEXT_LOT.fetch_add(1, Ordering::Relaxed);
        let lot = Arc::new(Lot {
            id,
            inbox: Mutex::new(Inbox { arrived: Vec::new(), woken: Vec::new() }),
            task: AtomicWaker::new(),
        });
        let weak: Weak<dyn Wakes> = Arc::downgrade(&lot) as Weak<dyn Wakes>;
        lots().write().unwrap_or_else(|e| e.into_inner()).insert(id, weak);
        tokio::spawn(LotTask {
            lot: lot.clone(),
            slots: Slots::default(),
            arrived: Vec::new(),
            woken: Vec::new(),
            dues: BinaryHeap::new(),
            timer: None,
            poller,
            events: mio::Events::with_capacity(EVENTS_PER_CALL),
            seen: Vec::new(),
        });
        Ok(Parking { lot })
    }

    /// Hold `value` until it is ready.
    pub fn park(&self, value: T) {
        lock(&self.lot.inbox).arrived.push(value);
        self.lot.task.wake();
    }
}

impl<T: Waiting> Drop for Parking<T> {
    fn drop(&mut self) {
        // The lot's task may be waiting for this handle to go.
        self.lot.task.wake();
    }
}

/// What a slot's waker reaches: its lot.
trait Wakes: Send + Sync {
    fn wake_slot(&self, slot: u32);
}

impl<T: Send> Wakes for Lot<T> {
    fn wake_slot(&self, slot: u32) {
        lock(&self.inbox).woken.push(slot);
        self.task.wake();
    }
}

static NEXT_LOT: AtomicU32 = AtomicU32::new(0);

/// The live lots, for their slots' wakers.
fn lots() -> &'static RwLock<HashMap<u32, Weak<dyn Wakes>>> {
    static LOTS: OnceLock<RwLock<HashMap<u32, Weak<dyn Wakes>>>> = OnceLock::new();
    LOTS.get_or_init(Default::default)
}

// Both numbers fit the data word only where a pointer has 64 bits (every target the server is
// built for).
const _: () = assert!(usize::BITS >= 64, "a slot's waker packs two u32s into a pointer");

/// The waker of slot `slot` in lot `lot`: both numbers in the data word, which is never
/// dereferenced.
fn slot_waker(lot: u32, slot: u32) -> Waker {
    let data = (u64::from(lot) << 32 | u64::from(slot)) as usize as *const ();
    // SAFETY: the vtable's functions never dereference `data` (it is two numbers), and they are
    // safe to call from any thread and any number of times, as `RawWaker` requires.
    unsafe { Waker::from_raw(RawWaker::new(data, &SLOT_WAKER)) }
}

static SLOT_WAKER: RawWakerVTable = RawWakerVTable::new(clone_slot, wake_slot, wake_slot, drop_slot);

fn clone_slot(data: *const ()) -> RawWaker {
    RawWaker::new(data, &SLOT_WAKER)
}

fn wake_slot(data: *const ()) {
    let bits = data as usize as u64;
    let (lot, slot) = ((bits >> 32) as u32, bits as u32);
    let found = lots().read().unwrap_or_else(|e| e.into_inner()).get(&lot).and_then(Weak::upgrade);
    if let Some(found) = found {
        found.wake_slot(slot);
    }
}

fn drop_slot(_: *const ()) {}

/// The lot's task: the parked values in their slots.
struct LotTask<T: Waiting> {
    lot: Arc<Lot<T>>,
    slots: Slots<T>,
    /// The inbox's lists, swapped in and out so their room is kept (up to [`KEPT_ROOM`] each:
    /// a burst of arrivals, say every reader reconnecting at once, would otherwise leave room
    /// for all of them in both lists for good).
    arrived: Vec<T>,
    woken: Vec<u32>,
    /// When each parked value is due (its slot, and the slot's use then: a slot emptied or taken
    /// again since is skipped when its time comes).
    dues: BinaryHeap<Reverse<(Instant, u32, u32)>>,
    /// The lot's one timer, for the earliest due.
    timer: Option<Pin<Box<Sleep>>>,
    /// The lot's own poller (an epoll instance, registered with tokio as one descriptor): it
    /// watches the parked values' descriptors, so they need no registration with tokio each.
    poller: AsyncFd<mio::Poll>,
    events: mio::Events,
    /// The poller's events of one call, by slot (and the slot's use when it was registered).
    seen: Vec<(u32, u32, Io)>,
}

/// The most room the inbox's lists keep between passes (values or slots).
const KEPT_ROOM: usize = 256;

/// Events taken from the poller per call; a pass takes at most [`EVENTS_PER_PASS`], then yields.
const EVENTS_PER_CALL: usize = 256;
const EVENTS_PER_PASS: usize = 4 * EVENTS_PER_CALL;

/// A poller's token: a slot and its use, so an event for an earlier value is known as such.
fn token(key: u32, use_: u32) -> mio::Token {
    mio::Token((u64::from(use_) << 32 | u64::from(key)) as usize)
}

fn slot_of(token: mio::Token) -> (u32, u32) {
    let bits = token.0 as u64;
    (bits as u32, (bits >> 32) as u32)
}

impl<T: Waiting> LotTask<T> {
    /// Poll the value in slot `key`; when it stays parked and `schedule` is set, its due joins
    /// the timer's list (a value's due is listed on arrival and after each of its times, so once
    /// at a time).
    fn poll_slot(&mut self, key: u32, schedule: bool, io: Io) {
        let waker = slot_waker(self.lot.id, key);
        let mut cx = Context::from_waker(&waker);
        let Some((value, use_)) = self.slots.get_mut(key) else { return };
        match value.poll_wait(&mut cx, io) {
            Poll::Pending => {
                if let Some(due) = value.due().filter(|_| schedule) {
                    self.dues.push(Reverse((due, key, use_)));
                    trim_dues(&mut self.dues, &self.slots);
                }
            }
            Poll::Ready(go_on) => {
                if let Some(value) = self.slots.remove(key) {
                    if let Some(fd) = value.fd() {
                        // Before it goes on (its task registers the descriptor with tokio) or
                        // is dropped (which may close it).
                        let _ = self.poller.get_ref().registry().deregister(&mut SourceFd(&fd));
                    }
                    if go_on {
                        value.go_on();
                    }
                }
            }
        }
    }

    /// Poll every value whose descriptor the poller saw an edge on, up to [`EVENTS_PER_PASS`]
    /// of them; false when more may be waiting (the caller passes again after a yield).
    fn run_poller(&mut self, cx: &mut Context<'_>) -> bool {
        let mut taken = 0;
        while taken < EVENTS_PER_PASS {
            let mut ready = match self.poller.poll_read_ready_mut(cx) {
                Poll::Ready(Ok(ready)) => ready,
                Poll::Ready(Err(e)) => {
                    tracing::warn!(error = %e, "the parking lot's poller failed");
                    return true;
                }
                Poll::Pending => return true,
            };
            match ready.get_inner_mut().poll(&mut self.events, Some(std::time::Duration::ZERO)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    tracing::warn!(error = %e, "the parking lot's poller failed");
                    return true;
                }
            }
            if self.events.is_empty() {
                // Nothing left: tokio waits for the poller's next edge (one that came meanwhile
                // is a newer readiness, which this does not clear).
                ready.clear_ready();
                continue;
            }
            drop(ready);
            self.seen.clear();
            for event in self.events.iter() {
                let (key, use_) = slot_of(event.token());
                let io = Io {
                    readable: event.is_readable() || event.is_read_closed() || event.is_error(),
                    writable: event.is_writable() || event.is_write_closed() || event.is_error(),
                };
                self.seen.push((key, use_, io));
            }
            taken += self.seen.len();
            let seen = std::mem::take(&mut self.seen);
            for &(key, use_, io) in &seen {
                if self.slots.use_of(key) == Some(use_) {
                    self.poll_slot(key, false, io);
                }
            }
            self.seen = seen;
        }
        false
    }

    /// Poll every value whose due has come, then set the lot's timer for the next due.
    fn run_timer(&mut self, cx: &mut Context<'_>) {
        let now = Instant::now();
        let mut due = Vec::new();
        while let Some(Reverse((at, key, use_))) = self.dues.peek().copied() {
            if at > now {
                break;
            }
            self.dues.pop();
            due.push((key, use_));
        }
        for (key, use_) in due {
            if self.slots.use_of(key) == Some(use_) {
                self.poll_slot(key, true, Io::default());
            }
        }
        let Some(Reverse((next, _, _))) = self.dues.peek().copied() else {
            self.timer = None;
            return;
        };
        if poll_deadline(&mut self.timer, next, cx).is_ready() {
            // A due that came meanwhile (or a value that is due again at once): the next pass,
            // after a yield.
            cx.waker().wake_by_ref();
        }
    }
}

/// Drop the dues of values no longer parked once they outnumber the parked values. Each park
/// lists a due and a value that leaves does not take its own out (the heap cannot), so a reader
/// that a client keeps sending back and forth (by reading slowly, a hand-back per batch) would
/// otherwise grow the heap by one entry per round trip until each one's time came; bounded, the
/// heap holds at most twice as many entries as there are parked values, and some room.
fn trim_dues<T>(dues: &mut BinaryHeap<Reverse<(Instant, u32, u32)>>, slots: &Slots<T>) {
    if dues.len() > 2 * slots.len + 64 {
        dues.retain(|Reverse((_, key, use_))| slots.use_of(*key) == Some(*use_));
    }
}

// The values are polled through `&mut` and moved out, never pinned where they lie.
impl<T: Waiting> Unpin for LotTask<T> {}

impl<T: Waiting> Future for LotTask<T> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        this.lot.task.register(cx.waker());
        {
            let mut inbox = lock(&this.lot.inbox);
            std::mem::swap(&mut inbox.arrived, &mut this.arrived);
            std::mem::swap(&mut inbox.woken, &mut this.woken);
        }
        let mut arrived = std::mem::take(&mut this.arrived);
        for value in arrived.drain(..) {
            let fd = value.fd();
            let key = this.slots.insert(value);
            if let Some(fd) = fd {
                let use_ = this.slots.use_of(key).unwrap_or_default();
                let interest = mio::Interest::READABLE | mio::Interest::WRITABLE;
                if let Err(e) =
                    this.poller.get_ref().registry().register(&mut SourceFd(&fd), token(key, use_), interest)
                {
                    // Unwatched, it would never hear its peer go: let it go now.
                    tracing::warn!(error = %e, "a parked connection's socket could not be watched; closing it");
                    drop(this.slots.remove(key));
                    continue;
                }
            }
            this.poll_slot(key, true, Io::default());
        }
        arrived.shrink_to(KEPT_ROOM);
        this.arrived = arrived;
        let mut woken = std::mem::take(&mut this.woken);
        for key in woken.drain(..) {
            this.poll_slot(key, false, Io::default());
        }
        woken.shrink_to(KEPT_ROOM);
        this.woken = woken;
        let polled_all = this.run_poller(cx);
        this.run_timer(cx);
        let inbox = lock(&this.lot.inbox);
        if !polled_all || !inbox.arrived.is_empty() || !inbox.woken.is_empty() {
            // More came during the pass: another pass, after a yield (a value that polls a
            // tokio resource on a spent budget is told to wait and woken again at once; looping
            // here would never end).
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        if this.slots.is_empty() && Arc::strong_count(&this.lot) == 1 {
            return Poll::Ready(());
        }
        Poll::Pending
    }
}

impl<T: Waiting> Drop for LotTask<T> {
    fn drop(&mut self) {
        lots().write().unwrap_or_else(|e| e.into_inner()).remove(&self.lot.id);
        // What was on its way holds a handle to the lot (through its server): dropping it here
        // lets the lot go.
        let mut inbox = lock(&self.lot.inbox);
        let arrived = std::mem::take(&mut inbox.arrived);
        drop(inbox);
        drop(arrived);
    }
}

/// The slots: chunks that never move or grow once made (a table that doubled would keep up to
/// as much room again as it holds), with the free keys to reuse. Each slot counts its uses, so
/// a due listed for an earlier value is known as such.
struct Slots<T> {
    chunks: Vec<Chunk<T>>,
    free: Vec<u32>,
    len: usize,
}

/// [`CHUNK`] slots, each a value or none and its use count.
type Chunk<T> = Box<[(Option<T>, u32)]>;

/// Slots per chunk.
const CHUNK: usize = 256;

impl<T> Default for Slots<T> {
    fn default() -> Self {
        Slots { chunks: Vec::new(), free: Vec::new(), len: 0 }
    }
}

impl<T> Slots<T> {
    fn insert(&mut self, value: T) -> u32 {
        let key = match self.free.pop() {
            Some(key) => key,
            None => {
                let key = (self.chunks.len() * CHUNK) as u32;
                self.chunks.push((0..CHUNK).map(|_| (None, 0)).collect());
                // The new chunk's other keys, lowest taken first.
                self.free.extend((key + 1..key + CHUNK as u32).rev());
                key
            }
        };
        let slot = &mut self.chunks[key as usize / CHUNK][key as usize % CHUNK];
        *slot = (Some(value), slot.1.wrapping_add(1));
        self.len += 1;
        key
    }

    /// The value in slot `key`, and the slot's use count.
    fn get_mut(&mut self, key: u32) -> Option<(&mut T, u32)> {
        let (value, use_) = self.chunks.get_mut(key as usize / CHUNK)?.get_mut(key as usize % CHUNK)?;
        Some((value.as_mut()?, *use_))
    }

    /// The use count of slot `key`, while it holds a value.
    fn use_of(&self, key: u32) -> Option<u32> {
        let (value, use_) = self.chunks.get(key as usize / CHUNK)?.get(key as usize % CHUNK)?;
        value.as_ref().map(|_| *use_)
    }

    fn remove(&mut self, key: u32) -> Option<T> {
        let value = self.chunks.get_mut(key as usize / CHUNK)?.get_mut(key as usize % CHUNK)?.0.take()?;
        self.free.push(key);
        self.len -= 1;
        Some(value)
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wakeup::Wakeup;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    /// A parked value that goes on once its flag is raised, or is dropped once `end` is.
    struct Flagged {
        go: Arc<Wakeup>,
        end: Arc<Wakeup>,
        polls: Arc<AtomicUsize>,
        went_on: tokio::sync::mpsc::UnboundedSender<usize>,
        id: usize,
    }

    impl Waiting for Flagged {
        fn poll_wait(&mut self, cx: &mut Context<'_>, _: Io) -> Poll<bool> {
            self.polls.fetch_add(1, Ordering::Relaxed);
            if self.go.poll_take(cx).is_ready() {
                return Poll::Ready(true);
            }
            if self.end.poll_take(cx).is_ready() {
                return Poll::Ready(false);
            }
            Poll::Pending
        }

        fn go_on(self) {
            let _ = self.went_on.send(self.id);
        }
    }

    #[tokio::test]
    async fn each_parked_value_goes_on_when_woken_and_not_before() {
        let parking = Parking::start().unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let polls = Arc::new(AtomicUsize::new(0));
        let flags: Vec<(Arc<Wakeup>, Arc<Wakeup>)> = (0..600).map(|_| Default::default()).collect();
        for (id, (go, end)) in flags.iter().enumerate() {
            parking.park(Flagged { go: go.clone(), end: end.clone(), polls: polls.clone(), went_on: tx.clone(), id });
        }
        // A flag raised before the value's first poll in the lot counts.
        flags[599].0.raise();
        assert_eq!(tokio::time::timeout(Duration::from_secs(2), rx.recv()).await.unwrap(), Some(599));
        assert!(tokio::time::timeout(Duration::from_millis(50), rx.recv()).await.is_err());
        // Woken out of order, across chunks; the ended ones never go on.
        for id in [3, 400, 0, 257] {
            flags[id].0.raise();
            assert_eq!(tokio::time::timeout(Duration::from_secs(2), rx.recv()).await.unwrap(), Some(id));
        }
        for (_, end) in &flags[10..20] {
            end.raise();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        flags[11].0.raise();
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(rx.try_recv().is_err(), "an ended value went on");
        // A slot freed and taken again: the new value waits for its own flag.
        let (go, end) = <(Arc<Wakeup>, Arc<Wakeup>)>::default();
        parking.park(Flagged { go: go.clone(), end, polls: polls.clone(), went_on: tx.clone(), id: 1000 });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(rx.try_recv().is_err());
        go.raise();
        assert_eq!(tokio::time::timeout(Duration::from_secs(2), rx.recv()).await.unwrap(), Some(1000));
        // Polled on arrival and per wake-up, not per pass over the lot.
        assert!(polls.load(Ordering::Relaxed) < 2 * 600 + 100, "{} polls", polls.load(Ordering::Relaxed));
    }

    #[tokio::test]
    async fn the_lot_task_ends_when_its_last_handle_goes_and_it_is_empty() {
        let parking = Parking::start().unwrap();
        let lot = Arc::downgrade(&parking.lot);
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let go = Arc::new(Wakeup::default());
        let flagged =
            Flagged { go: go.clone(), end: Default::default(), polls: Default::default(), went_on: tx, id: 1 };
        parking.park(flagged);
        drop(parking);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(lot.upgrade().is_some(), "the lot ended with a value parked");
        go.raise();
        assert_eq!(tokio::time::timeout(Duration::from_secs(2), rx.recv()).await.unwrap(), Some(1));
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(lot.upgrade().is_none(), "the lot's task did not end");
        let waker = slot_waker(u32::MAX - 1, 0);
        waker.wake_by_ref();
        waker.wake();
    }

    /// A burst of arrivals leaves no room for all of them behind (the lists swap between the
    /// inbox and the lot's task, so the task's list is the inbox's after the next pass).
    #[tokio::test]
    async fn a_burst_of_arrivals_leaves_no_room_for_all_of_them() {
        let parking = Parking::start().unwrap();
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let flagged = |id| Flagged {
            go: Default::default(),
            end: Default::default(),
            polls: Default::default(),
            went_on: tx.clone(),
            id,
        };
        for id in 0..5000 {
            parking.park(flagged(id));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        parking.park(flagged(5000));
        tokio::time::sleep(Duration::from_millis(50)).await;
        parking.park(flagged(5001));
        let room = lock(&parking.lot.inbox).arrived.capacity();
        assert!(room <= KEPT_ROOM, "the inbox keeps room for {room} arrivals");
    }

    /// A value that pings each time its due comes (the next one `every` later), and goes on
    /// after `pings` of them.
    struct Timed {
        due: Instant,
        every: Duration,
        pings: Arc<Mutex<Vec<(usize, Instant)>>>,
        left: usize,
        id: usize,
    }

    impl Waiting for Timed {
        fn poll_wait(&mut self, _: &mut Context<'_>, _: Io) -> Poll<bool> {
            let now = Instant::now();
            if now < self.due {
                return Poll::Pending;
            }
            lock(&self.pings).push((self.id, now));
            self.left -= 1;
            self.due = now + self.every;
            if self.left == 0 {
                Poll::Ready(false)
            } else {
                Poll::Pending
            }
        }

        fn go_on(self) {}

        fn due(&self) -> Option<Instant> {
            Some(self.due)
        }
    }

    #[tokio::test]
    async fn each_parked_value_is_polled_when_its_due_comes_and_not_before() {
        let parking = Parking::start().unwrap();
        let pings = Arc::new(Mutex::new(Vec::new()));
        let start = Instant::now();
        for (id, (first, every)) in [(120, 100), (40, 60), (80, 1000)].into_iter().enumerate() {
            let due = start + Duration::from_millis(first);
            let every = Duration::from_millis(every);
            parking.park(Timed { due, every, pings: pings.clone(), left: 3, id });
        }
        tokio::time::sleep(Duration::from_millis(600)).await;
        let pings = lock(&pings).clone();
        let ids: Vec<usize> = pings.iter().map(|(id, _)| *id).collect();
        // In time order: 1 at 40, 100, 160; 2 at 80 (then not for a second); 0 at 120, 220, 320.
        assert_eq!(ids, [1, 2, 1, 0, 1, 0, 0], "{pings:?}");
        // Never before its time.
        let firsts = [120, 40, 80].map(Duration::from_millis);
        let everys = [100, 60, 1000].map(Duration::from_millis);
        let mut last: [Option<Instant>; 3] = [None; 3];
        for (id, at) in &pings {
            let not_before = last[*id].map_or(start + firsts[*id], |prev| prev + everys[*id]);
            assert!(*at >= not_before, "{id} early: {pings:?}");
            last[*id] = Some(*at);
        }
    }

    /// A value that watches a socket: reads what comes (on a `readable` edge, until the socket
    /// would block) and is dropped at its peer's end.
    struct Watched {
        socket: std::os::unix::net::UnixStream,
        got: Arc<Mutex<Vec<u8>>>,
        polls: Arc<AtomicUsize>,
    }

    impl Waiting for Watched {
        fn poll_wait(&mut self, _: &mut Context<'_>, io: Io) -> Poll<bool> {
            use std::io::Read;
            self.polls.fetch_add(1, Ordering::Relaxed);
            if io.readable {
                let mut buf = [0u8; 3];
                loop {
                    match self.socket.read(&mut buf) {
                        Ok(0) => return Poll::Ready(false),
                        Ok(n) => lock(&self.got).extend_from_slice(&buf[..n]),
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(_) => return Poll::Ready(false),
                    }
                }
            }
            Poll::Pending
        }

        fn go_on(self) {}

        fn fd(&self) -> Option<RawFd> {
            use std::os::fd::AsRawFd;
            Some(self.socket.as_raw_fd())
        }
    }

    #[tokio::test]
    async fn a_parked_socket_is_read_when_bytes_come_and_its_value_dropped_at_its_end() {
        use std::io::Write;
        let parking = Parking::start().unwrap();
        let mut peers = Vec::new();
        let mut watched = Vec::new();
        for _ in 0..300 {
            let (ours, peer) = std::os::unix::net::UnixStream::pair().unwrap();
            ours.set_nonblocking(true).unwrap();
            let got = Arc::new(Mutex::new(Vec::new()));
            let polls = Arc::new(AtomicUsize::new(0));
            parking.park(Watched { socket: ours, got: got.clone(), polls: polls.clone() });
            peers.push(Some(peer));
            watched.push((got, polls));
        }
        let wait_for = |i: usize, want: &'static [u8]| {
            let got = watched[i].0.clone();
            async move {
                for _ in 0..200 {
                    if lock(&got).as_slice() == want {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                panic!("value {i} read {:?}", lock(&got));
            }
        };
        // Across chunks; more than one read's worth, in two writes.
        for i in [0, 299, 256] {
            peers[i].as_mut().unwrap().write_all(b"hello").unwrap();
        }
        for i in [0, 299, 256] {
            wait_for(i, b"hello").await;
        }
        peers[299].as_mut().unwrap().write_all(b" again").unwrap();
        wait_for(299, b"hello again").await;
        // A peer's end drops its value (and with it the socket); the others stay.
        drop(peers[5].take());
        for _ in 0..200 {
            if Arc::strong_count(&watched[5].0) == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(Arc::strong_count(&watched[5].0), 1, "the value whose peer left is still parked");
        assert_eq!(Arc::strong_count(&watched[6].0), 2);
        // A quiet socket's value is polled on arrival and for its first edge (writable), not
        // per pass.
        let most = watched.iter().map(|(_, polls)| polls.load(Ordering::Relaxed)).max().unwrap();
        assert!(most <= 4, "a value was polled {most} times");
        assert!(watched[1].0.lock().unwrap().is_empty());
    }

    /// A value that owes `kept` to a socket its peer does not read: it writes on each
    /// `writable` edge until the socket would block, and goes on once all is written.
    struct Owing {
        socket: std::os::unix::net::UnixStream,
        kept: Vec<u8>,
        writable_edges: Arc<AtomicUsize>,
        done: tokio::sync::mpsc::UnboundedSender<()>,
    }

    impl Waiting for Owing {
        fn poll_wait(&mut self, _: &mut Context<'_>, io: Io) -> Poll<bool> {
            use std::io::Write;
            if io.writable {
                self.writable_edges.fetch_add(1, Ordering::Relaxed);
                while !self.kept.is_empty() {
                    match self.socket.write(&self.kept) {
                        Ok(n) => drop(self.kept.drain(..n)),
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(_) => return Poll::Ready(false),
                    }
                }
            }
            if self.kept.is_empty() {
                Poll::Ready(true)
            } else {
                Poll::Pending
            }
        }

        fn go_on(self) {
            let _ = self.done.send(());
        }

        fn fd(&self) -> Option<RawFd> {
            use std::os::fd::AsRawFd;
            Some(self.socket.as_raw_fd())
        }
    }

    #[tokio::test]
    async fn a_parked_socket_that_was_full_is_written_when_room_comes() {
        use std::io::{Read, Write};
        let parking = Parking::start().unwrap();
        let (mut ours, mut peer) = std::os::unix::net::UnixStream::pair().unwrap();
        ours.set_nonblocking(true).unwrap();
        // Fill the socket: the kernel refuses more (which is what makes the next room an edge).
        let block = vec![b'x'; 64 * 1024];
        let mut filled = 0usize;
        loop {
            match ours.write(&block) {
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("{e}"),
            }
        }
        let (done, mut went_on) = tokio::sync::mpsc::unbounded_channel();
        let writable_edges = Arc::new(AtomicUsize::new(0));
        let kept = b"KEPT".repeat(1000);
        parking.park(Owing { socket: ours, kept: kept.clone(), writable_edges: writable_edges.clone(), done });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(went_on.try_recv().is_err(), "went on with the socket full");
        // The peer reads everything: room comes, the lot hears of it, the kept bytes go out.
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            let mut buf = vec![0u8; 64 * 1024];
            while got.len() < filled + 4000 {
                let n = peer.read(&mut buf).unwrap();
                assert!(n > 0, "end of file before the kept bytes");
                got.extend_from_slice(&buf[..n]);
            }
            got
        });
        tokio::time::timeout(Duration::from_secs(5), went_on.recv()).await.expect("never written").unwrap();
        let got = reader.join().unwrap();
        assert_eq!(&got[filled..], &kept[..], "the kept bytes, in order, after what filled the socket");
        assert!(writable_edges.load(Ordering::Relaxed) >= 1);
    }

    /// A value parked and sent on over and over leaves one due behind each time; the heap is
    /// trimmed to the parked values' own before it grows past twice their number (and some room).
    #[test]
    fn dues_of_values_gone_are_trimmed() {
        let mut slots = Slots::default();
        let mut dues = BinaryHeap::new();
        let later = Instant::now() + Duration::from_secs(15);
        let kept: Vec<u32> = (0..10).map(|i| slots.insert(i)).collect();
        for key in &kept {
            dues.push(Reverse((later, *key, slots.use_of(*key).unwrap())));
        }
        let mut most = 0;
        for round in 0..10_000u32 {
            let key = slots.insert(100 + round);
            dues.push(Reverse((later, key, slots.use_of(key).unwrap())));
            trim_dues(&mut dues, &slots);
            most = most.max(dues.len());
            slots.remove(key);
        }
        assert!(most <= 2 * 11 + 64 + 1, "the heap grew to {most}");
        // The parked values' own dues stay.
        trim_dues(&mut dues, &slots);
        for key in &kept {
            let use_ = slots.use_of(*key);
            assert!(dues.iter().any(|Reverse((_, k, u))| k == key && Some(*u) == use_), "slot {key} lost its due");
        }
    }
}
