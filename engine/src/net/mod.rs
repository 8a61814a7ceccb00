//! The network: topologies, routing and placement of ranks on nodes.
//!
//! - [`topology`]: nodes, routers and densely numbered directed links of tori, meshes, fat trees,
//!   dragonflies and crossbars, computed arithmetically (no link tables).
//! - [`routing`]: the path of a message under each topology's static and adaptive policies.
//! - [`placement`]: which node each rank runs on.

pub mod placement;
pub mod routing;
pub mod topology;

pub use placement::{Placement, RankMap};
pub use routing::{route, Routing};
pub use topology::{Link, LinkClass, LinkId, Topology, TopologySpec, Vertex};
