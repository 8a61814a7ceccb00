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

use crate::spec_error::SpecError;
use crate::time::Time;
pub use adaptive::AdaptiveSpec;
pub use tokens::{Thresholds, TokenSpec};

/// Which admission control a simulation applies (the `[throttle]` table), valid by construction:
/// outside the engine only [`AdmissionSpec::token`], [`AdmissionSpec::rate`],
/// [`AdmissionSpec::proxy`] and [`AdmissionSpec::adaptive`] make one.
#[derive(Clone, Debug, PartialEq)]
pub enum AdmissionSpec {
    /// Inline token throttling (ITT): a node-wide count of messages in flight.
    #[non_exhaustive]
    Token(TokenSpec),
    /// Inline rate throttling (IRT): at least `gap` ps between two injections of a task.
    #[non_exhaustive]
    Rate { gap: Time },
    /// `servers` per node inject for the tasks; optional tokens behind the servers.
    #[non_exhaustive]
    Proxy { servers: u32, tokens: Option<TokenSpec> },
    /// Token throttling whose limit adapts to the node's completion rate (no thresholds given).
    #[non_exhaustive]
    Adaptive(AdaptiveSpec),
}

impl AdmissionSpec {
    pub fn token(tokens: TokenSpec) -> AdmissionSpec {
        AdmissionSpec::Token(tokens)
    }

    /// A gap of 0 would not limit anything: refused.
    pub fn rate(gap: Time) -> Result<AdmissionSpec, SpecError> {
        if gap == 0 {
            return Err(SpecError::new("throttle.gap_ns", "the gap must be larger than 0"));
        }
        Ok(AdmissionSpec::Rate { gap })
    }

    /// No server would stop every message: refused.
    pub fn proxy(servers: u32, tokens: Option<TokenSpec>) -> Result<AdmissionSpec, SpecError> {
        if servers == 0 {
            return Err(SpecError::new("throttle.servers", "at least one server per node"));
        }
        Ok(AdmissionSpec::Proxy { servers, tokens })
    }

    pub fn adaptive(spec: AdaptiveSpec) -> AdmissionSpec {
        AdmissionSpec::Adaptive(spec)
    }
}
