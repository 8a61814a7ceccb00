//! Link loads: every pair's weight (bytes) laid on each link of its route on an idle network.

use super::IdleRoutes;

/// Per link id, the summed weight of the pairs whose route crosses it; per pair, its route's
/// network links (0 within a node).
#[derive(Clone, Debug, PartialEq)]
pub struct Loads {
    pub link: Vec<f64>,
    pub hops: Vec<u32>,
}

/// Lays `weight[i]` on every link (injection, network, ejection) of the route from node `src[i]`
/// to node `dst[i]`; a pair within one node crosses no link. Errors on columns of different
/// lengths or a node out of range. O(pairs · path length + links).
pub fn route_loads(routes: &IdleRoutes, src: &[u32], dst: &[u32], weight: &[f64]) -> Result<Loads, String> {
    if src.len() != dst.len() || src.len() != weight.len() {
        return Err(format!(
            "source nodes, destination nodes and weights differ in length ({}, {}, {})",
            src.len(),
            dst.len(),
            weight.len()
        ));
    }
    let topo = routes.topology();
    let nodes = topo.num_nodes();
    if let Some(i) = (0..src.len()).find(|&i| src[i] >= nodes || dst[i] >= nodes) {
        return Err(format!(
            "pair {i} joins nodes {} and {}, but the topology has nodes 0..{}",
            src[i],
            dst[i],
            nodes - 1
        ));
    }
    let mut link = vec![0.0; topo.num_links() as usize];
    let mut hops = Vec::with_capacity(src.len());
    let mut path = Vec::new();
    for i in 0..src.len() {
        path.clear();
        routes.path(src[i], dst[i], &mut path);
        for &l in &path {
            link[l as usize] += weight[i];
        }
        hops.push(path.len().saturating_sub(2) as u32);
    }
    Ok(Loads { link, hops })
}

#[cfg(test)]
mod tests {
    use super::super::tests::spec;
    use super::*;
    use crate::net::TopologySpec;

    #[test]
    fn a_line_carries_bytes_times_hops_plus_two() {
        let routes = IdleRoutes::new(&spec(TopologySpec::Mesh { dims: vec![5] }, None)).unwrap();
        // 0 -> 4 (4 hops), 3 -> 1 (2 hops), 2 -> 2 (same node).
        let loads = route_loads(&routes, &[0, 3, 2], &[4, 1, 2], &[10.0, 3.0, 99.0]).unwrap();
        assert_eq!(loads.hops, vec![4, 2, 0]);
        assert_eq!(loads.link.iter().sum::<f64>(), 10.0 * (4.0 + 2.0) + 3.0 * (2.0 + 2.0));
        let topo = routes.topology();
        assert_eq!(loads.link[topo.injection(0) as usize], 10.0);
        assert_eq!(loads.link[topo.ejection(1) as usize], 3.0);
        assert_eq!(loads.link[topo.injection(2) as usize], 0.0);
    }

    #[test]
    fn bad_columns_are_refused() {
        let routes = IdleRoutes::new(&spec(TopologySpec::Torus { dims: vec![4] }, None)).unwrap();
        assert!(route_loads(&routes, &[0], &[1, 2], &[1.0]).unwrap_err().contains("differ in length"));
        assert_eq!(
            route_loads(&routes, &[0, 1], &[1, 4], &[1.0, 1.0]).unwrap_err(),
            "pair 1 joins nodes 1 and 4, but the topology has nodes 0..3"
        );
    }
}
