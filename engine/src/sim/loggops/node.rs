//! The node models' handlers (docs/models.md): the NIC shared by a node's ranks (congestion
//! curves), admission control (token pools, a rate) and proxy servers. They see a message through
//! `Sim::msgs` and `Sim::details` and act on the core only through its handle: `schedule` an event,
//! `resume` an operation they held back (with its key), and `done` to complete a send.

use crate::nic::{stretched, NicCurves, NicQueues};
use crate::node::NodeModel;
use crate::policy::adaptive::Adaptive;
use crate::policy::proxy::Proxy;
use crate::policy::rate::RateLimiter;
use crate::policy::tokens::TokenPool;
use crate::policy::PolicySpec;
use crate::schedule::Program;
use crate::sim::queue::Entry;
use crate::time::Time;
use crate::u64_map::U64Map;

use super::{Sim, ARRIVAL, FLOW_START, MSG_FLAG, NIC_DONE, NIC_ENQUEUE, PROXY_DONE, RELEASE};

/// The node models' state during a run.
pub(super) struct NodeSim {
    node_of: Vec<u32>,
    curves: Option<NicCurves>,
    nic: NicQueues,
    tokens: Option<TokenPool<Entry>>,
    rate: Option<RateLimiter>,
    proxy: Option<(Proxy, u32)>,
    /// The adaptive policy's limits (on `tokens`).
    adaptive: Option<Adaptive>,
    /// Sends granted their tokens after waiting, by rank << 32 | op: the tokens they hold.
    admitted: U64Map<u64>,
    /// Tokens to give back at a RELEASE event: (rank, tokens), slots reused through `free_releases`.
    releases: Vec<(u32, u64)>,
    free_releases: Vec<u32>,
    granted: Vec<(Entry, u64)>,
    waits: u64,
    /// Sends leaving their node that admission let go (once each, after any wait).
    grants: u64,
    /// Sends held back by the rate, by rank << 32 | op: a send the gap holds again (others of its
    /// task went first) still counts as one wait, as in the library.
    rate_held: U64Map<()>,
}

impl NodeSim {
    pub(super) fn new(model: &NodeModel, node_of: Vec<u32>) -> NodeSim {
        let ranks = node_of.len();
        let nodes = node_of.iter().map(|&n| n as usize + 1).max().unwrap_or(0);
        let (mut tokens, mut rate, mut proxy, mut adaptive) = (None, None, None, None);
        match &model.policy {
            Some(PolicySpec::Token(spec)) => tokens = Some(TokenPool::new(spec.clone(), nodes, ranks)),
            Some(PolicySpec::Rate { gap }) => rate = Some(RateLimiter::new(*gap, ranks)),
            Some(PolicySpec::Proxy { servers, tokens: behind }) => {
                proxy = Some((Proxy::new(*servers, &node_of), *servers));
                tokens = behind.as_ref().map(|spec| TokenPool::new(spec.clone(), nodes, ranks));
            }
            Some(PolicySpec::Adaptive(spec)) => {
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

impl<P: Program> Sim<'_, P> {
    /// Admission control of a send leaving its node (a send granted after waiting brings its
    /// tokens; the proxy admits at its servers instead).
    pub(super) fn admit(&mut self, t: Time, e: Entry, size: u64) -> Admission {
        let admission = self.admission(t, e, size);
        let ns = self.node.as_mut().expect("admission needs the node model");
        if matches!(admission, Admission::Now(_)) && (ns.tokens.is_some() || ns.rate.is_some() || ns.proxy.is_some()) {
            ns.grants += 1;
        }
        admission
    }

    fn admission(&mut self, t: Time, e: Entry, size: u64) -> Admission {
        let ns = self.node.as_mut().expect("admission needs the node model");
        if let Some(tokens) = ns.admitted.remove(&((e.host as u64) << 32 | e.data as u64)) {
            return Admission::Now(tokens);
        }
        if ns.proxy.is_some() {
            return Admission::Now(0);
        }
        if let Some(rate) = &mut ns.rate {
            let key = (e.host as u64) << 32 | e.data as u64;
            if let Err(at) = rate.admit(e.host, t) {
                ns.waits += ns.rate_held.insert(key, ()).is_none() as u64;
                return Admission::At(at);
            }
            ns.rate_held.remove(&key);
        }
        match &mut ns.tokens {
            Some(pool) => match pool.request(ns.node_of[e.host as usize], e.host, size, e) {
                Some(tokens) => Admission::Now(tokens),
                None => Admission::Parked,
            },
            None => Admission::Now(0),
        }
    }

    pub(super) fn node_event(&mut self, t: Time, e: Entry) {
        let id = e.data & !MSG_FLAG;
        match e.host {
            NIC_ENQUEUE => {
                let ns = self.node.as_mut().expect("node events need the node model");
                let m = &self.msgs[id as usize];
                let node = ns.node_of[m.src as usize];
                match &mut ns.proxy {
                    Some((proxy, _)) => {
                        proxy.push(node, m.src, id);
                        self.proxy_dispatch(t, node);
                    }
                    None => self.nic_enqueue(t, id),
                }
            }
            NIC_DONE => self.nic_done(t, id),
            RELEASE => {
                let ns = self.node.as_mut().expect("node events need the node model");
                let (task, tokens) = ns.releases[id as usize];
                ns.free_releases.push(id);
                self.release(t, task, tokens);
            }
            _ => self.proxy_done(t, id),
        }
    }

    /// Message `id` enters its node's NIC; its service starts now if the NIC was idle.
    pub(super) fn nic_enqueue(&mut self, t: Time, id: u32) {
        let ns = self.node.as_mut().expect("NIC events need the node model");
        let node = ns.node_of[self.msgs[id as usize].src as usize];
        if ns.nic.push(node, self.details[id as usize].injector, id) {
            self.nic_start(t, node);
        }
    }

    /// The NIC of `node` starts injecting its oldest message at the rate its load allows now:
    /// `(g + (s-1)G) / factor(active injectors, messages held)`.
    pub(super) fn nic_start(&mut self, t: Time, node: u32) {
        let ns = self.node.as_ref().expect("NIC events need the node model");
        let id = ns.nic.front(node).expect("a message to inject");
        let (active, held) = ns.nic.load(node);
        let m = self.msgs[id as usize];
        let k = self.par.costs(m.size);
        let nominal = k.g + m.size.saturating_sub(1) * k.G;
        let factor = ns.curves.as_ref().expect("NIC queues run only with curves").factor(m.size, active, held);
        let service = stretched(nominal, factor);
        // Waiting for the shared NIC and its slowdown count as contention, like a busy link.
        let d = &mut self.details[id as usize];
        d.link_delay = (t - d.handed + service).saturating_sub(nominal);
        self.schedule(t + service, NIC_DONE, id);
    }

    /// The NIC injected message `id`: it travels L; an eager send completes and gives back its
    /// tokens; the next message's service starts.
    pub(super) fn nic_done(&mut self, t: Time, id: u32) {
        let m = self.msgs[id as usize];
        let ns = self.node.as_mut().expect("NIC events need the node model");
        let node = ns.node_of[m.src as usize];
        let d = &mut self.details[id as usize];
        ns.nic.pop(node, d.injector);
        let more = ns.nic.front(node).is_some();
        let k = self.par.costs(m.size);
        d.arrived = t + k.L;
        let tokens = d.tokens;
        self.schedule(t + k.L, ARRIVAL, id);
        if m.size <= self.par.S {
            self.done(m.src, m.send_op);
            if tokens > 0 {
                self.release(t, m.src, tokens);
            }
        }
        if more {
            self.nic_start(t, node);
        }
    }

    /// Free servers of `node` take the waiting messages, round robin over the tasks' queues (and
    /// take their tokens first when tokens stand behind the servers). A server is busy `g` per
    /// message.
    pub(super) fn proxy_dispatch(&mut self, t: Time, node: u32) {
        while let Some(id) = self.proxy_take(node) {
            let g = self.par.costs(self.msgs[id as usize].size).g;
            self.schedule(t + g, PROXY_DONE, id);
        }
    }

    /// A free server of `node` takes the next message it may send (None: none free, or none
    /// admitted); the message holds the tokens it took and is injected by that server.
    fn proxy_take(&mut self, node: u32) -> Option<u32> {
        let ns = self.node.as_mut().expect("proxy events need the node model");
        let ranks = ns.node_of.len() as u32;
        let (proxy, servers) = ns.proxy.as_mut().expect("a proxy");
        let (msgs, tokens) = (&self.msgs, &mut ns.tokens);
        let mut held = 0;
        let (server, _, id) = proxy.dispatch(node, |task, id| match tokens {
            None => true,
            Some(pool) => pool.try_take(node, task, msgs[id as usize].size).map(|k| held = k).is_some(),
        })?;
        let d = &mut self.details[id as usize];
        d.tokens = held;
        d.injector = ranks + node * *servers + server;
        Some(id)
    }

    /// A proxy server has injected message `id`: into the shared NIC (with curves), else on its
    /// way as in LogGOPS; the server takes the next message.
    pub(super) fn proxy_done(&mut self, t: Time, id: u32) {
        let m = self.msgs[id as usize];
        let d = self.details[id as usize];
        let ns = self.node.as_mut().expect("proxy events need the node model");
        let node = ns.node_of[m.src as usize];
        let ranks = ns.node_of.len() as u32;
        let (proxy, servers) = ns.proxy.as_mut().expect("a proxy");
        proxy.free_server(node, d.injector - ranks - node * *servers);
        if ns.curves.is_some() {
            self.nic_enqueue(t, id);
        } else {
            let k = self.par.costs(m.size);
            if m.networked {
                self.schedule(t, FLOW_START, id);
            } else {
                self.details[id as usize].arrived = t + k.L;
                self.schedule(t + k.L, ARRIVAL, id);
            }
            if d.tokens > 0 && m.size <= self.par.S {
                self.schedule_release(t + m.size.saturating_sub(1) * k.G, m.src, d.tokens);
            }
        }
        self.proxy_dispatch(t, node);
    }

    /// `task` gives back `tokens` at `at` (a RELEASE event).
    pub(super) fn schedule_release(&mut self, at: Time, task: u32, tokens: u64) {
        let ns = self.node.as_mut().expect("tokens need the node model");
        let slot = match ns.free_releases.pop() {
            Some(slot) => {
                ns.releases[slot as usize] = (task, tokens);
                slot
            }
            None => {
                ns.releases.push((task, tokens));
                ns.releases.len() as u32 - 1
            }
        };
        self.schedule(at, RELEASE, slot);
    }

    /// `task`'s send completed and gives back its tokens: the waiting sends they admit are issued
    /// now, in ticket order, keeping their keys (or the proxy's servers resume).
    pub(super) fn release(&mut self, t: Time, task: u32, tokens: u64) {
        let ns = self.node.as_mut().expect("tokens need the node model");
        let node = ns.node_of[task as usize];
        let mut granted = std::mem::take(&mut ns.granted);
        granted.clear();
        let pool = ns.tokens.as_mut().expect("a token pool");
        // Adaptive policy: the completion may move the node's limit before it grants the line.
        if let Some(limit) = ns.adaptive.as_mut().and_then(|a| a.completed(node, t, pool.waiting(node))) {
            pool.set_limit(node, limit);
        }
        pool.release(node, task, tokens, &mut granted);
        if ns.proxy.is_some() {
            ns.granted = granted;
            return self.proxy_dispatch(t, node);
        }
        for &(entry, k) in &granted {
            ns.admitted.insert((entry.host as u64) << 32 | entry.data as u64, k);
        }
        for &(entry, _) in &granted {
            self.resume(t, entry);
        }
        self.node.as_mut().expect("just used").granted = granted;
    }
}
