//! Admission control: when a task may inject a message into its node's NIC (docs/models.md, "NIC
//! congestion and admission control"). Only messages that leave the node are controlled.
//!
//! - [`tokens`]: a count-based pool per node with FIFO tickets, and Luo et al. 2012's Algorithm 1
//!   thresholds (CCT, NRCT, CRCT) as a count-based predictor.
//! - [`rate`]: a least gap between two injections of a task.
//! - [`proxy`]: servers per node that inject on behalf of the tasks, round robin over their queues.
//! - [`adaptive`]: a token pool whose limit follows the node's completion rate (closed loop).

pub mod adaptive;
pub mod proxy;
pub mod rate;
pub mod tokens;

use crate::time::Time;
pub use adaptive::AdaptiveSpec;
pub use tokens::{Thresholds, TokenSpec};

/// Which admission control a simulation applies.
#[derive(Clone, Debug, PartialEq)]
pub enum PolicySpec {
    /// Inline token throttling (ITT): a node-wide count of messages in flight.
    Token(TokenSpec),
    /// Inline rate throttling (IRT): at least `gap` ps between two injections of a task.
    Rate { gap: Time },
    /// `servers` per node inject for the tasks; optional tokens behind the servers.
    Proxy { servers: u32, tokens: Option<TokenSpec> },
    /// Token throttling whose limit adapts to the node's completion rate (no thresholds given).
    Adaptive(AdaptiveSpec),
}

impl PolicySpec {
    /// Checks the values (a zero count would stop every message).
    pub fn validate(&self) -> Result<(), String> {
        match self {
            PolicySpec::Token(t) => t.validate(),
            PolicySpec::Rate { gap } if *gap == 0 => Err("rate: the gap must be larger than 0".into()),
            PolicySpec::Rate { .. } => Ok(()),
            PolicySpec::Proxy { servers: 0, .. } => Err("proxy: at least one server per node".into()),
            PolicySpec::Proxy { tokens, .. } => tokens.as_ref().map_or(Ok(()), TokenSpec::validate),
            PolicySpec::Adaptive(a) => a.validate(),
        }
    }
}
