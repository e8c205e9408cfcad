//! Benchmark: planning every image of the project (goal: under 20 ms per image).
//!
//! Run with `cargo bench -p planner --bench plan`; `IMGBUILD_BENCH_ROUNDS` sets the rounds.

use std::path::Path;
use std::time::{Duration, Instant};

use planner::{plan, PlanOptions, Project};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let project = Project::at(&root).expect("the repository is a project");
    let rounds: usize = std::env::var("IMGBUILD_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(50);
    let opts = PlanOptions::default();
    let images = project.images().expect("images");
    println!(
        "planning {} images, {rounds} rounds each (after 3 warm-up rounds)",
        images.len()
    );
    println!(
        "{:<22} {:>7} {:>10} {:>10}",
        "image", "tasks", "median ms", "p95 ms"
    );
    let mut medians = Vec::new();
    for image in &images {
        let mut tasks = 0;
        for _ in 0..3 {
            tasks = plan(&project, image, &opts)
                .expect("plan")
                .all_tasks()
                .len();
        }
        let mut times: Vec<Duration> = (0..rounds)
            .map(|_| {
                let start = Instant::now();
                let planned = plan(&project, image, &opts).expect("plan");
                let elapsed = start.elapsed();
                std::hint::black_box(planned);
                elapsed
            })
            .collect();
        times.sort();
        let median = percentile(&times, 0.5);
        medians.push(median);
        println!(
            "{image:<22} {tasks:>7} {:>10.2} {:>10.2}",
            ms(median),
            ms(percentile(&times, 0.95))
        );
    }
    medians.sort();
    println!(
        "worst median: {:.2} ms per image (goal: under 20 ms)",
        ms(*medians.last().expect("an image"))
    );
}
