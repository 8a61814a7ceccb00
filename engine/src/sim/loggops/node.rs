//! The node models' handlers (docs/models.md): the NIC shared by a node's ranks (congestion
//! curves), admission control (token pools, a rate) and proxy servers. Their state is `NodeSim`'s;
//! they act on the core only through the handle (`super::handle`): `schedule` an event, `resume` a
//! send they held back (with its key), `complete` a send they carried.

use crate::nic::{stretched, NicSpec, NicQueues};
use crate::node::NodeSpec;
use crate::policy::adaptive::Adaptive;
use crate::policy::proxy::Proxy;
use crate::policy::rate::RateLimiter;
use crate::policy::tokens::TokenPool;
use crate::policy::AdmissionSpec;
use crate::schedule::{admitted, Program};
use crate::sim::queue::Entry;
use crate::time::Time;
use crate::u64_map::U64Map;

use super::handle::{Handle, Held};
use super::{ARRIVAL, FLOW_START, MSG_FLAG, NIC_DONE, NIC_ENQUEUE, PROXY_DONE, RELEASE, SERVE};

/// The node models' state during a run.
pub(super) struct NodeSim {
    node_of: Vec<u32>,
    curves: Option<NicSpec>,
    nic: NicQueues,
    tokens: Option<TokenPool<Held>>,
    rate: Option<RateLimiter>,
    proxy: Option<(Proxy, u32)>,
    /// The adaptive policy's limits (on `tokens`).
    adaptive: Option<Adaptive>,
    /// Sends granted their tokens after waiting, by rank << 32 | op: the tokens they hold.
    admitted: U64Map<u64>,
    /// Tokens to give back at a RELEASE event: (rank, tokens), slots reused through `free_releases`.
    releases: Vec<(u32, u64)>,
    free_releases: Vec<u32>,
    granted: Vec<(Held, u64)>,
    waits: u64,
    /// Sends leaving their node that admission let go (once each, after any wait).
    grants: u64,
    /// Sends held back by the rate, by rank << 32 | op: a send the gap holds again (others of its
    /// task went first) still counts as one wait, as in the library.
    rate_held: U64Map<()>,
    /// How long a waiting rank takes to see its tokens (`NodeSpec::handoff`), and per node whether
    /// a SERVE event is due.
    handoff: Time,
    serving: Vec<bool>,
}

impl NodeSim {
    pub(super) fn new(model: &NodeSpec, node_of: Vec<u32>) -> NodeSim {
        let ranks = node_of.len();
        let nodes = node_of.iter().map(|&n| n as usize + 1).max().unwrap_or(0);
        let (mut tokens, mut rate, mut proxy, mut adaptive) = (None, None, None, None);
        match &model.policy {
            Some(AdmissionSpec::Token(spec)) => tokens = Some(TokenPool::new(spec.clone(), nodes, ranks)),
            Some(AdmissionSpec::Rate { gap }) => rate = Some(RateLimiter::new(*gap, ranks)),
            Some(AdmissionSpec::Proxy { servers, tokens: behind }) => {
                proxy = Some((Proxy::new(*servers, &node_of), *servers));
                tokens = behind.as_ref().map(|spec| TokenPool::new(spec.clone(), nodes, ranks));
            }
            Some(AdmissionSpec::Adaptive(spec)) => {
                let limits = Adaptive::new(spec.clone(), &node_of);
                tokens = Some(limits.pool(ranks));
                adaptive = Some(limits);
            }
            None => {}
        }
        let servers = proxy.as_ref().map_or(0, |p| p.1 as usize);
        NodeSim {
            curves: model.nic.clone(),
            nic: NicQueues::new(nodes, ranks + nodes * servers),
            node_of,
            tokens,
            rate,
            proxy,
            adaptive,
            admitted: U64Map::default(),
            releases: Vec::new(),
            free_releases: Vec::new(),
            granted: Vec::new(),
            waits: 0,
            grants: 0,
            rate_held: U64Map::default(),
            handoff: model.handoff,
            serving: vec![false; nodes],
        }
    }

    /// Whether a message from `src` to `dst` leaves its node (the node models apply to it).
    #[inline]
    pub(super) fn between_nodes(&self, src: u32, dst: u32) -> bool {
        self.node_of[src as usize] != self.node_of[dst as usize]
    }

    /// Whether a message leaving its node goes through the shared NIC (congestion curves).
    pub(super) fn nic_path(&self) -> bool {
        self.curves.is_some()
    }

    /// Whether a message leaving its node goes through the proxy servers.
    pub(super) fn proxied(&self) -> bool {
        self.proxy.is_some()
    }

    /// Sends that waited for admission (a rate gap, token tickets).
    pub(super) fn admission_waits(&self) -> u64 {
        self.waits + self.tokens.as_ref().map_or(0, |p| p.waits)
    }

    /// Sends leaving their node that admission let go.
    pub(super) fn admission_grants(&self) -> u64 {
        self.grants
    }

    /// The most tokens in use on a node (0 without a token pool).
    pub(super) fn admission_max_in_use(&self) -> u64 {
        self.tokens.as_ref().map_or(0, |p| p.max_used)
    }
}

/// What admission control says to a send that leaves its node.
pub(super) enum Admission {
    /// Go now, holding this many tokens.
    Now(u64),
    /// Try again at this time (rate).
    At(Time),
    /// Wait in line: the pool re-issues the send when its tokens come back.
    Parked,
}

impl NodeSim {
    /// Admission control of send event `e` leaving its node (a send granted after waiting brings
    /// its tokens; the proxy admits at its servers instead).
    pub(super) fn admit(&mut self, t: Time, e: Entry, size: u64) -> Admission {
        let admission = self.admission(t, e, size);
        if matches!(admission, Admission::Now(_)) && (self.tokens.is_some() || self.rate.is_some() || self.proxy.is_some()) {
            self.grants += 1;
        }
        admission
    }

    fn admission(&mut self, t: Time, e: Entry, size: u64) -> Admission {
        if let Some(tokens) = self.admitted.remove(&((e.host as u64) << 32 | e.data as u64)) {
            return Admission::Now(tokens);
        }
        if self.proxy.is_some() {
            return Admission::Now(0);
        }
        if let Some(rate) = &mut self.rate {
            let key = (e.host as u64) << 32 | e.data as u64;
            if let Err(at) = rate.admit(e.host, t) {
                self.waits += self.rate_held.insert(key, ()).is_none() as u64;
                return Admission::At(at);
            }
            self.rate_held.remove(&key);
        }
        match &mut self.tokens {
            Some(pool) => match pool.request(self.node_of[e.host as usize], e.host, size, t, Held::offered(e)) {
                Some(tokens) => Admission::Now(tokens),
                None => Admission::Parked,
            },
            None => Admission::Now(0),
        }
    }

    /// A node event (NIC_ENQUEUE, NIC_DONE, RELEASE, PROXY_DONE) about slot `id`.
    pub(super) fn event<P: Program>(&mut self, e: Entry, h: &mut Handle<'_, P>) {
        let id = e.data & !MSG_FLAG;
        match e.host {
            NIC_ENQUEUE => {
                let src = h.msg(id).src;
                let node = self.node_of[src as usize];
                match &mut self.proxy {
                    Some((proxy, _)) if admitted(h.msg(id).tag) => {
                        proxy.push(node, src, id);
                        self.proxy_dispatch(node, h);
                    }
                    _ => self.nic_enqueue(id, h), // no proxy, or a message the servers do not carry
                }
            }
            NIC_DONE => self.nic_done(id, h),
            RELEASE => {
                let (task, tokens) = self.releases[id as usize];
                self.free_releases.push(id);
                self.release(task, tokens, h);
            }
            SERVE => {
                self.serving[id as usize] = false;
                self.serve(id, h);
            }
            _ => self.proxy_done(id, h),
        }
    }

    /// Message `id` enters its node's NIC; its service starts now if the NIC was idle.
    fn nic_enqueue<P: Program>(&mut self, id: u32, h: &mut Handle<'_, P>) {
        let node = self.node_of[h.msg(id).src as usize];
        if self.nic.push(node, h.details(id).injector, id) {
            self.nic_start(node, h);
        }
    }

    /// The NIC of `node` starts injecting its oldest message at the rate its load allows now:
    /// `(g + (s-1)G) / factor(active injectors, messages held)`.
    fn nic_start<P: Program>(&mut self, node: u32, h: &mut Handle<'_, P>) {
        let t = h.now();
        let id = self.nic.front(node).expect("a message to inject");
        let (active, held) = self.nic.load(node);
        let m = h.msg(id);
        let (k, _) = h.costs(m.size);
        let nominal = k.g + m.size.saturating_sub(1) * k.G;
        let factor = self.curves.as_ref().expect("NIC queues run only with curves").factor(m.size, active, held);
        let service = stretched(nominal, factor);
        // Waiting for the shared NIC and its slowdown count as contention, like a busy link.
        let d = h.details(id);
        d.link_delay = (t - d.handed + service).saturating_sub(nominal);
        h.schedule(t + service, NIC_DONE, id);
    }

    /// The NIC injected message `id`: it travels L; an eager send completes and gives back its
    /// tokens; the next message's service starts.
    fn nic_done<P: Program>(&mut self, id: u32, h: &mut Handle<'_, P>) {
        let t = h.now();
        let m = h.msg(id);
        let node = self.node_of[m.src as usize];
        let (k, eager) = h.costs(m.size);
        let d = h.details(id);
        self.nic.pop(node, d.injector);
        let more = self.nic.front(node).is_some();
        d.arrived = t + k.L;
        let tokens = d.tokens;
        h.schedule(t + k.L, ARRIVAL, id);
        if eager {
            h.complete(m.src, m.send_op);
            if tokens > 0 {
                self.release(m.src, tokens, h);
            }
        }
        if more {
            self.nic_start(node, h);
        }
    }

    /// Free servers of `node` take the waiting messages, round robin over the tasks' queues (and
    /// take their tokens first when tokens stand behind the servers). A server is busy `g` per
    /// message.
    fn proxy_dispatch<P: Program>(&mut self, node: u32, h: &mut Handle<'_, P>) {
        while let Some(id) = self.proxy_take(node, h) {
            let g = h.costs(h.msg(id).size).0.g;
            h.schedule(h.now() + g, PROXY_DONE, id);
        }
    }

    /// A free server of `node` takes the next message it may send (None: none free, or none
    /// admitted); the message holds the tokens it took and is injected by that server.
    fn proxy_take<P: Program>(&mut self, node: u32, h: &mut Handle<'_, P>) -> Option<u32> {
        let ranks = self.node_of.len() as u32;
        let (proxy, servers) = self.proxy.as_mut().expect("a proxy");
        let tokens = &mut self.tokens;
        let mut held = 0;
        let (server, _, id) = proxy.dispatch(node, |task, id| match tokens {
            None => true,
            Some(pool) => pool.try_take(node, task, h.msg(id).size).map(|k| held = k).is_some(),
        })?;
        let d = h.details(id);
        d.tokens = held;
        d.injector = ranks + node * *servers + server;
        Some(id)
    }

    /// A proxy server has injected message `id`: into the shared NIC (with curves), else on its
    /// way as in LogGOPS; the server takes the next message.
    fn proxy_done<P: Program>(&mut self, id: u32, h: &mut Handle<'_, P>) {
        let t = h.now();
        let m = h.msg(id);
        let d = *h.details(id);
        let node = self.node_of[m.src as usize];
        let ranks = self.node_of.len() as u32;
        let (proxy, servers) = self.proxy.as_mut().expect("a proxy");
        proxy.free_server(node, d.injector - ranks - node * *servers);
        if self.curves.is_some() {
            self.nic_enqueue(id, h);
        } else {
            let (k, eager) = h.costs(m.size);
            if m.networked {
                h.schedule(t, FLOW_START, id);
            } else {
                h.details(id).arrived = t + k.L;
                h.schedule(t + k.L, ARRIVAL, id);
            }
            if d.tokens > 0 && eager {
                self.schedule_release(t + m.size.saturating_sub(1) * k.G, m.src, d.tokens, h);
            }
        }
        self.proxy_dispatch(node, h);
    }

    /// `task` gives back `tokens` at `at` (a RELEASE event).
    pub(super) fn schedule_release<P: Program>(&mut self, at: Time, task: u32, tokens: u64, h: &mut Handle<'_, P>) {
        let slot = match self.free_releases.pop() {
            Some(slot) => {
                self.releases[slot as usize] = (task, tokens);
                slot
            }
            None => {
                self.releases.push((task, tokens));
                self.releases.len() as u32 - 1
            }
        };
        h.schedule(at, RELEASE, slot);
    }

    /// `task`'s send completed and gives back its tokens now: the waiting sends they admit are
    /// resumed, in ticket order, keeping their keys (or the proxy's servers take them); with a
    /// handoff, the line is served that much later (the tickets keep their places meanwhile, so
    /// sends asking in between wait behind them, as in the library's FIFO).
    pub(super) fn release<P: Program>(&mut self, task: u32, tokens: u64, h: &mut Handle<'_, P>) {
        let node = self.node_of[task as usize];
        let pool = self.tokens.as_mut().expect("a token pool");
        // Adaptive policy: the completion may move the node's limit before it grants the line.
        if let Some(limit) = self.adaptive.as_mut().and_then(|a| a.completed(node, h.now(), pool.waiting(node))) {
            pool.set_limit(node, limit);
        }
        pool.give_back(node, task, tokens);
        if self.handoff == 0 || !pool.waiting(node) {
            return self.serve(node, h);
        }
        if !self.serving[node as usize] {
            self.serving[node as usize] = true;
            h.schedule(h.now() + self.handoff, SERVE, node);
        }
    }

    /// The line of `node`'s pool takes the tokens that fit now.
    fn serve<P: Program>(&mut self, node: u32, h: &mut Handle<'_, P>) {
        let mut granted = std::mem::take(&mut self.granted);
        granted.clear();
        self.tokens.as_mut().expect("a token pool").serve(node, h.now(), &mut granted);
        if self.proxy.is_some() {
            self.granted = granted;
            return self.proxy_dispatch(node, h);
        }
        for (held, k) in granted.drain(..) {
            self.admitted.insert(held.op_key(), k);
            h.resume(h.now(), held);
        }
        self.granted = granted;
    }
}
