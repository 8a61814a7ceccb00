//! The network: topologies, routing and placement of ranks on nodes.
//!
//! - [`topology`]: nodes, routers and densely numbered directed links of tori, meshes, fat trees,
//!   dragonflies and crossbars, computed arithmetically (no link tables).
//! - [`routing`]: the path of a message under each topology's static and adaptive policies.
//! - [`placement`]: which node each rank runs on.
//! - [`flow`]: max-min fair sharing of link bandwidth among the messages in flight (fluid).
//! - [`packet`]: the same sharing packet by packet, with round-robin service at every link.
//! - [`network`]: all of the above attached to the simulator, with the timing of one message.

pub mod flow;
pub mod network;
pub mod packet;
pub mod placement;
pub mod routing;
pub mod topology;

pub use network::{LinkBucket, Network, NetworkSpec, Sharing};
pub use placement::{Placement, RankMap};
pub use routing::{route, Routing};
pub use topology::{Link, LinkClass, LinkId, Topology, TopologySpec, Vertex, OPTIONAL_SIZES, TOPOLOGY_KINDS};
