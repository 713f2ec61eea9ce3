//! Two checkouts of one repository in one daemon: the first embeds every chunk, the second
//! should take its vectors from the daemon's shared embedding cache.

use std::path::Path;
use std::time::{Duration, Instant};

use amanmcp_proto::pb;
use anyhow::Context;

use crate::world::{copy_tree, start_daemon, wait_for_pass, wait_for_vectors};

/// Copy `dir` twice, index the first copy to the end, then the second; print each one's
/// lexical time, time until every vector is there, and how many vectors came from the
/// shared cache.
pub async fn bench_worktrees(dir: &Path) -> anyhow::Result<()> {
    let work = tempfile::Builder::new()
        .prefix("amanmcp-worktrees-")
        .tempdir_in("/tmp")?;
    let (daemon, mut client) = start_daemon().await?;
    for name in ["first", "second"] {
        let copy = work.path().join(name);
        copy_tree(dir, &copy).with_context(|| format!("copying {}", dir.display()))?;
        let root = copy.canonicalize()?.to_string_lossy().into_owned();
        let started = Instant::now();
        client
            .open_project(pb::OpenProjectRequest {
                root: root.clone(),
                ..Default::default()
            })
            .await?;
        wait_for_pass(&mut client, &root, 1).await?;
        let lexical_s = started.elapsed().as_secs_f64();
        let status = wait_for_vectors(&mut client, &root, Duration::from_secs(3600)).await?;
        let ready_s = started.elapsed().as_secs_f64();
        let vectors = status.vectors.context("no embedder: nothing to share")?;
        println!(
            "{name} checkout: {} files, {} chunks; lexical {lexical_s:.1} s, vectors complete \
             {ready_s:.1} s ({:.1}x lexical); {} of {} vectors from the shared cache ({:.1}%)",
            status.files,
            status.chunks,
            ready_s / lexical_s.max(1e-3),
            vectors.from_shared_cache,
            vectors.embedded,
            100.0 * vectors.from_shared_cache as f64 / (vectors.embedded.max(1)) as f64,
        );
    }
    drop(daemon);
    Ok(())
}
