//! The message conform pass (docs/contract.md §8) over arbitrary sequences of part frames: what it
//! lets through must obey the part rules, checked against an independent model written here
//! (never by asking the conform pass or its `Tally` again).
//!
//! Guarantees checked, for every frame the pass forwards (`pass`, or `open then pass`):
//! - a chunk names a part the delivered frames started (or the `open`'s table holds), that has
//!   not ended, continues its body exactly (no gap, no overlap that disagrees), spans its text,
//!   and leaves no gap in the message;
//! - a `part` starts exactly the next part (no second start, so no change of kind), a `part-end`
//!   or `set` names a started part, and every event is one unit at the end of the message;
//! - at most one `open`, whose table fits its offset; nothing passes after a terminal verdict.
//!
//! And the other way, so the pass cannot satisfy the check by refusing everything: a fresh chunk
//! or event that the model finds legal is forwarded, never turned into a `stale`.
//!
//! The bytes steer a generator that reads the model's state, so most frames are near-legal
//! (the next body offset, the next part number) and a few bytes reach every rule's edge.
#![no_main]

use libfuzzer_sys::fuzz_target;
use twoplane_core::message::{FrameNumbers, MessageConform, MessageKind as K, MessageVerdict};

/// Every read succeeds: zeros once the input runs out.
struct Bytes<'a> {
    data: &'a [u8],
    at: usize,
}

impl Bytes<'_> {
    fn byte(&mut self) -> u8 {
        let b = self.data.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }

    fn done(&self) -> bool {
        self.at >= self.data.len()
    }

    /// A small signed nudge, mostly zero: -1, 0, 0, 0, 0, +1, +2 or a non-integer.
    fn nudge(&mut self) -> f64 {
        [-1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 2.0, 0.5][usize::from(self.byte() % 8)]
    }
}

/// What a reader downstream of the pass has been told: the message's length and each part's body
/// length and end, from the frames forwarded alone.
struct Model {
    opened: bool,
    done: bool,
    pos: f64,
    bodies: Vec<f64>,
    ended: Vec<bool>,
}

fn int(x: f64) -> bool {
    x.is_finite() && x.fract() == 0.0 && x >= 0.0
}

impl Model {
    fn new(from: f64) -> Self {
        Model { opened: false, done: false, pos: from, bodies: vec![from], ended: vec![false] }
    }

    /// Whether a chunk or an event is legal and fresh here, and what it does when it is:
    /// `Err` names the rule it breaks, `Ok(None)` is a replay.
    fn judge(&self, n: &FrameNumbers) -> Result<Option<Effect>, &'static str> {
        let kind = K::from_code(n.kind);
        let (from, seq) = (n.a, n.b);
        if !int(from) || !int(seq) {
            return Err("offsets that are not integers");
        }
        if from > self.pos {
            return Err("a gap in the message");
        }
        if seq <= self.pos {
            return Ok(None);
        }
        let count = self.bodies.len() as f64;
        if kind == K::Chunk {
            if n.c != seq - from {
                return Err("a text that does not span its offsets");
            }
            let (part, at) = match (n.part.is_nan(), n.at.is_nan()) {
                (true, true) => (0.0, from),
                (false, false) if int(n.part) && int(n.at) && n.part <= f64::from(u32::MAX) => (n.part, n.at),
                _ => return Err("a malformed part or body offset"),
            };
            if part >= count {
                return Err("a delta for an unknown part");
            }
            let p = part as usize;
            if self.ended[p] {
                return Err("a delta after its part ended");
            }
            if at + (self.pos - from) != self.bodies[p] {
                return Err("a body offset that does not continue the body");
            }
            return Ok(Some(Effect::Body { part: p, grow: seq - self.pos }));
        }
        if seq != from + 1.0 {
            return Err("an event wider than one unit");
        }
        let names_part = matches!(kind, K::Part | K::PartEnd | K::Set);
        if names_part && !(int(n.part) && n.part <= f64::from(u32::MAX)) {
            return Err("a malformed part number");
        }
        match kind {
            K::Part if n.part != count => Err("a part that is not the next (a second start changes its kind)"),
            K::Part => Ok(Some(Effect::Start)),
            K::PartEnd | K::Set if n.part >= count => Err("an event for an unknown part"),
            K::PartEnd => Ok(Some(Effect::End { part: n.part as usize })),
            _ => Ok(Some(Effect::Other)),
        }
    }

    fn commit(&mut self, effect: Effect, seq: f64) {
        match effect {
            Effect::Body { part, grow } => self.bodies[part] += grow,
            Effect::Start => {
                self.bodies.push(0.0);
                self.ended.push(false);
            }
            Effect::End { part } => self.ended[part] = true,
            Effect::Other => {}
        }
        self.pos = seq;
    }
}

#[derive(Clone, Copy)]
enum Effect {
    Body { part: usize, grow: f64 },
    Start,
    End { part: usize },
    Other,
}

fn forwarded(v: MessageVerdict) -> bool {
    matches!(v, MessageVerdict::Pass | MessageVerdict::OpenThenPass)
}

fn terminal(v: MessageVerdict) -> bool {
    matches!(v, MessageVerdict::Violation(_) | MessageVerdict::Terminate)
}

/// The next frame, steered by the model: near-legal numbers with a nudge.
fn next_frame(b: &mut Bytes<'_>, m: &Model) -> FrameNumbers {
    let count = m.bodies.len() as f64;
    let op = b.byte() % 10;
    let mut n = FrameNumbers::new(K::Chunk);
    match op {
        0..=3 => {
            // A chunk: shorthand, a started part, the next one or one past it.
            let len = f64::from(1 + b.byte() % 4);
            let from = (m.pos - f64::from(b.byte() % 3)).max(0.0) + b.nudge().max(0.0) * f64::from(b.byte() % 2);
            n.a = from;
            n.b = from + len + if b.byte() % 16 == 0 { 1.0 } else { 0.0 };
            n.c = len;
            if b.byte() % 4 != 0 {
                let part = (f64::from(b.byte()) % (count + 2.0)).floor();
                let body = m.bodies.get(part as usize).copied().unwrap_or(0.0);
                n.part = part;
                n.at = (body - (m.pos - from)).max(0.0) + b.nudge();
            }
        }
        4 => {
            n.kind = K::Part as u32;
            (n.a, n.b) = (m.pos, m.pos + 1.0);
            n.part = (count + b.nudge()).max(0.0);
        }
        5 | 6 => {
            n.kind = [K::PartEnd, K::Set][usize::from(b.byte() % 2)] as u32;
            let from = m.pos + b.nudge().min(1.0);
            (n.a, n.b) = (from, from + 1.0);
            n.part = (f64::from(b.byte()) % (count + 1.0)).floor();
        }
        7 => {
            n.kind = [K::Meta, K::Finish, K::Transient][usize::from(b.byte() % 3)] as u32;
            let from = m.pos + b.nudge().min(1.0);
            (n.a, n.b) = (from, from + if b.byte() % 16 == 0 { 2.0 } else { 1.0 });
        }
        8 => {
            n.kind = K::Durable as u32;
            n.a = (m.pos - f64::from(b.byte() % 3)).max(0.0);
        }
        _ => {
            // A terminal or a frame no message has: end, stale, absent, unknown.
            n.kind = [K::End, K::Stale, K::Absent, K::Unknown][usize::from(b.byte() % 4)] as u32;
            n.a = m.pos;
        }
    }
    n
}

fn run(data: &[u8]) -> Result<(), String> {
    let mut b = Bytes { data, at: 0 };
    let requested = f64::from(b.byte() % 8);
    let mut conform = MessageConform::new(requested);
    let mut m = Model::new(requested);

    // Sometimes a relay opens first, with a part table of its own.
    if b.byte() % 2 == 0 {
        let parts: Vec<f64> = (0..b.byte() % 4).map(|_| f64::from(b.byte() % 4)).collect();
        let seq = requested + f64::from(b.byte() % 8);
        let table = (!parts.is_empty()).then_some(parts.as_slice());
        let v = conform.feed_open(true, requested, seq, requested, table);
        if forwarded(v) {
            let lens = table.map_or_else(|| vec![requested], <[f64]>::to_vec);
            if lens.iter().any(|l| !int(*l)) || lens.iter().sum::<f64>() > requested {
                return Err(format!("an open whose table {lens:?} cannot fit {requested} passed"));
            }
            m.opened = true;
            m.ended = vec![false; lens.len()];
            m.bodies = lens;
        }
        m.done = terminal(v);
    }

    while !b.done() {
        let n = next_frame(&mut b, &m);
        let v = conform.feed_numbers(n);
        if m.done {
            if v != MessageVerdict::Drop {
                return Err(format!("{v:?} after a terminal verdict, for {n:?}"));
            }
            continue;
        }
        let kind = K::from_code(n.kind);
        if kind == K::Chunk || kind.is_event() {
            match m.judge(&n) {
                Ok(Some(effect)) => {
                    if !forwarded(v) {
                        return Err(format!("a legal fresh {} was not forwarded ({v:?}): {n:?}", kind.as_str()));
                    }
                    m.commit(effect, n.b);
                    m.opened = true;
                }
                Ok(None) if forwarded(v) && kind != K::Chunk => {
                    return Err(format!("a replayed {} was forwarded: {n:?}", kind.as_str()));
                }
                Ok(None) => {
                    // A chunk wholly held is the six-frame pass's to drop; either way the model
                    // does not move, since nothing new was said.
                    if forwarded(v) {
                        return Err(format!("a replayed chunk was forwarded: {n:?}"));
                    }
                }
                Err(rule) if forwarded(v) => {
                    return Err(format!("conform forwarded {} breaking the rule \"{rule}\": {n:?}", kind.as_str()));
                }
                Err(_) => {}
            }
        }
        m.done = terminal(v) || (forwarded(v) && matches!(kind, K::End | K::Stale | K::Absent));
    }
    let v = conform.end();
    if m.done && v != MessageVerdict::Drop {
        return Err(format!("end() answered {v:?} after a terminal verdict"));
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = run(data) {
        panic!("{broken}");
    }
});
