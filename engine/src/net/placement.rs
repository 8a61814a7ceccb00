//! Placement: the node each rank runs on.
//!
//! A job of `R` ranks with `ranks_per_node = c` uses `⌈R / c⌉` nodes, as a batch system would
//! allocate it. [`Placement::Block`] and [`Placement::Cyclic`] order the ranks over those same
//! nodes (so comparing them changes the order, not the allocation); [`Placement::Explicit`] names
//! any node of the topology for each rank.

use crate::spec_error::SpecError;

/// How ranks are laid out over nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Ranks `0..c` on node 0, `c..2c` on node 1, …: rank `r` on node `r / c`.
    Block,
    /// Round robin over the job's `⌈R / c⌉` nodes: rank `r` on node `r mod ⌈R / c⌉`.
    Cyclic,
    /// The node of each rank, in rank order (for instance read from a file).
    Explicit(Vec<u32>),
}

impl Placement {
    /// Reads "block" or "cyclic" (case-insensitive); explicit placements come as a list.
    pub fn parse(name: &str) -> Result<Placement, String> {
        match name.trim().to_ascii_lowercase().as_str() {
            "block" => Ok(Placement::Block),
            "cyclic" => Ok(Placement::Cyclic),
            _ => Err(format!("unknown placement '{name}'; use block, cyclic or a list of nodes")),
        }
    }
}

/// A validated placement of `ranks` ranks. Memory O(1), O(ranks) for an explicit list.
#[derive(Clone, Debug)]
pub struct RankMap {
    placement: Placement,
    ranks: u32,
    ranks_per_node: u32,
    /// Nodes the job uses under block and cyclic placement.
    job_nodes: u32,
}

impl RankMap {
    /// Places `ranks` ranks on a topology of `nodes` nodes, at most `ranks_per_node` on each.
    /// Errors when a count is 0 (`topology.ranks_per_node`), when the ranks do not fit (`ranks >
    /// nodes × ranks_per_node`: the whole `topology`, too small a shape), or when an explicit list
    /// has the wrong length, names a node out of range or puts more than `ranks_per_node` ranks on
    /// a node (`topology.placement`). O(1); O(ranks · log ranks) for an explicit list.
    pub fn new(placement: Placement, ranks: u32, nodes: u32, ranks_per_node: u32) -> Result<RankMap, SpecError> {
        if ranks == 0 || nodes == 0 || ranks_per_node == 0 {
            return Err(SpecError::new("topology.ranks_per_node", format!(
                "placement needs at least 1 rank, node and rank per node (got {ranks} ranks, {nodes} nodes, \
                 {ranks_per_node} ranks per node)"
            )));
        }
        if ranks as u64 > nodes as u64 * ranks_per_node as u64 {
            return Err(SpecError::new("topology", format!(
                "{ranks} ranks do not fit on {nodes} nodes with {ranks_per_node} ranks per node (at most {})",
                nodes as u64 * ranks_per_node as u64
            )));
        }
        if let Placement::Explicit(list) = &placement {
            check_explicit(list, ranks, nodes, ranks_per_node).map_err(|e| SpecError::new("topology.placement", e))?;
        }
        let job_nodes = ranks.div_ceil(ranks_per_node);
        Ok(RankMap { placement, ranks, ranks_per_node, job_nodes })
    }

    /// The node of `rank`. Panics if `rank >= ranks()`. O(1).
    #[inline]
    pub fn node_of(&self, rank: u32) -> u32 {
        assert!(rank < self.ranks, "rank {rank} out of range ({} ranks)", self.ranks);
        match &self.placement {
            Placement::Block => rank / self.ranks_per_node,
            Placement::Cyclic => rank % self.job_nodes,
            Placement::Explicit(list) => list[rank as usize],
        }
    }

    /// Number of ranks placed.
    pub fn ranks(&self) -> u32 {
        self.ranks
    }

    /// Most ranks any node may hold.
    pub fn ranks_per_node(&self) -> u32 {
        self.ranks_per_node
    }
}

fn check_explicit(list: &[u32], ranks: u32, nodes: u32, per_node: u32) -> Result<(), String> {
    if list.len() != ranks as usize {
        return Err(format!(
            "placement lists {} nodes for {ranks} ranks; give one node per rank",
            list.len()
        ));
    }
    if let Some(rank) = list.iter().position(|&n| n >= nodes) {
        return Err(format!(
            "placement puts rank {rank} on node {}, but the topology has nodes 0..{}",
            list[rank],
            nodes - 1
        ));
    }
    let mut sorted = list.to_vec();
    sorted.sort_unstable();
    if let Some(run) = sorted.chunk_by(|a, b| a == b).find(|run| run.len() > per_node as usize) {
        let node = run[0];
        let on_node: Vec<String> = (0..list.len())
            .filter(|&r| list[r] == node)
            .take(per_node as usize + 1)
            .map(|r| r.to_string())
            .collect();
        return Err(format!(
            "placement puts {} ranks on node {node} (ranks {}{}), more than {per_node} ranks per node",
            run.len(),
            on_node.join(", "),
            if run.len() > on_node.len() { ", …" } else { "" }
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes_of(map: &RankMap) -> Vec<u32> {
        (0..map.ranks()).map(|r| map.node_of(r)).collect()
    }

    #[test]
    fn block_and_cyclic_use_the_same_nodes() {
        let block = RankMap::new(Placement::Block, 7, 64, 2).unwrap();
        assert_eq!(nodes_of(&block), vec![0, 0, 1, 1, 2, 2, 3]);
        let cyclic = RankMap::new(Placement::Cyclic, 7, 64, 2).unwrap();
        assert_eq!(nodes_of(&cyclic), vec![0, 1, 2, 3, 0, 1, 2]);
        let one_each = RankMap::new(Placement::Cyclic, 5, 5, 1).unwrap();
        assert_eq!(nodes_of(&one_each), vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn explicit_lists_are_followed() {
        let map = RankMap::new(Placement::Explicit(vec![3, 0, 3, 1]), 4, 4, 2).unwrap();
        assert_eq!(nodes_of(&map), vec![3, 0, 3, 1]);
    }

    #[test]
    fn errors_name_the_problem() {
        let err = |p, ranks, nodes, per| RankMap::new(p, ranks, nodes, per).unwrap_err().problem;
        assert_eq!(
            err(Placement::Block, 9, 4, 2),
            "9 ranks do not fit on 4 nodes with 2 ranks per node (at most 8)"
        );
        assert!(err(Placement::Cyclic, 0, 4, 2).contains("at least 1 rank"));
        assert!(err(Placement::Block, 4, 4, 0).contains("0 ranks per node"));
        assert_eq!(
            err(Placement::Explicit(vec![0, 1]), 3, 4, 1),
            "placement lists 2 nodes for 3 ranks; give one node per rank"
        );
        assert_eq!(
            err(Placement::Explicit(vec![0, 9, 1]), 3, 4, 1),
            "placement puts rank 1 on node 9, but the topology has nodes 0..3"
        );
        assert_eq!(
            err(Placement::Explicit(vec![2, 0, 2, 1, 2, 2]), 6, 4, 2),
            "placement puts 4 ranks on node 2 (ranks 0, 2, 4, …), more than 2 ranks per node"
        );
        assert_eq!(Placement::parse(" Cyclic "), Ok(Placement::Cyclic));
        assert!(Placement::parse("scatter").unwrap_err().contains("unknown placement 'scatter'"));
    }
}
