//! Slurm, the engine HPC sites already run (issue 58): a real single-host Slurm from Debian
//! (`slurmctld`, `slurmd`, `munged`) on 127.0.0.1 runs `contrib/slurm/submit` for three images
//! that share their base and a role: the first image as one job, then the other two as a job
//! array that waits for it. Each job has a cache folder of its own, as nodes with empty disks do,
//! and Debian's docker-registry is the cache they share. Both array tasks take the shared layers
//! from the registry: each shared layer is built once, by the first job. Needs root, slurm-wlm,
//! munge, debootstrap, docker-registry, python3 and openssl, as CI has.

use crate::common;
use crate::registry_server;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use registry_server::*;
use serde_json::Value;

/// A single-host Slurm cluster (and its munge) that stops with the test.
struct Cluster {
    conf: PathBuf,
    dir: PathBuf,
    daemons: Vec<Child>,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for daemon in &mut self.daemons {
            let _ = daemon.kill();
            let _ = daemon.wait();
        }
    }
}

/// The first job's id: its cache folder is known before it is submitted.
const FIRST_JOB_ID: u32 = 100;

impl Cluster {
    fn start(dir: &Path) -> Cluster {
        for tool in ["slurmctld", "slurmd", "munged", "sbatch"] {
            let found = Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            assert!(found, "{tool} is missing: apt-get install slurm-wlm munge");
        }
        std::fs::create_dir_all(dir.join("state")).expect("state");
        std::fs::create_dir_all(dir.join("spool")).expect("spool");
        let key = dir.join("munge.key");
        std::fs::write(&key, [0x5au8; 1024]).expect("munge key");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o400)).expect("chmod");
        let socket = dir.join("munge.sock");
        let munged = Command::new("munged")
            .args(["--foreground", "--force"])
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--key-file={}", key.display()))
            .arg(format!("--log-file={}", dir.join("munged.log").display()))
            .arg(format!("--pid-file={}", dir.join("munged.pid").display()))
            .arg(format!("--seed-file={}", dir.join("munged.seed").display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("munged");
        let mut cluster = Cluster {
            conf: dir.join("slurm.conf"),
            dir: dir.to_owned(),
            daemons: vec![munged],
        };
        wait_until("munged's socket", || socket.exists());
        std::fs::write(&cluster.conf, slurm_conf(dir, &socket)).expect("slurm.conf");
        let mut ctld = Command::new("slurmctld");
        ctld.args(["-D", "-i", "-f"]).arg(&cluster.conf);
        cluster
            .daemons
            .push(quiet(&mut ctld).spawn().expect("slurmctld"));
        let mut slurmd = Command::new("slurmd");
        slurmd
            .args(["-D", "-N", "localhost", "-f"])
            .arg(&cluster.conf);
        cluster
            .daemons
            .push(quiet(&mut slurmd).spawn().expect("slurmd"));
        wait_until("the node to be idle", || {
            let out = cluster.command("sinfo").args(["-h", "-o", "%T"]).output();
            out.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "idle")
        });
        cluster
    }

    /// A Slurm client command of this cluster.
    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        command.env("SLURM_CONF", &self.conf);
        command
    }

    /// What the daemons logged, for a failing test.
    fn logs(&self) -> String {
        ["slurmctld.log", "slurmd.log"]
            .iter()
            .map(|f| std::fs::read_to_string(self.dir.join(f)).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

fn quiet(command: &mut Command) -> &mut Command {
    command.stdout(Stdio::null()).stderr(Stdio::null())
}

fn slurm_conf(dir: &Path, socket: &Path) -> String {
    let (ctld, slurmd) = (free_port(), free_port());
    let d = dir.display();
    format!(
        "ClusterName=imgbuild-test\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort={ctld}\n\
         SlurmdPort={slurmd}\nAuthType=auth/munge\nAuthInfo=socket={}\nCredType=cred/munge\n\
         SlurmUser=root\nSlurmdUser=root\nStateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool\n\
         SlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/slurmd.pid\n\
         SlurmctldLogFile={d}/slurmctld.log\nSlurmdLogFile={d}/slurmd.log\n\
         FirstJobId={FIRST_JOB_ID}\nProctrackType=proctrack/pgid\nTaskPlugin=task/none\n\
         JobAcctGatherType=jobacct_gather/none\nSelectType=select/cons_tres\n\
         SelectTypeParameters=CR_CPU\nReturnToService=2\nMpiDefault=none\nSwitchType=switch/none\n\
         NodeName=localhost NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN\n\
         PartitionName=build Nodes=localhost Default=YES MaxTime=INFINITE State=UP\n",
        socket.display()
    )
}

fn wait_until(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !ready() {
        assert!(Instant::now() < deadline, "waited a minute for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The fixture project with two more recipes over twin-a's base and role (`shared`, whose layer
/// depends on nothing image-specific), each with a role of its own.
fn project(work: &Path) -> PathBuf {
    let project = work.join("project");
    copy_fixture("images", &project);
    let recipe = std::fs::read_to_string(project.join("images/twin-a.yml")).expect("recipe");
    for own in ["third", "fourth"] {
        let tasks = project.join(format!("roles/{own}/tasks"));
        std::fs::create_dir_all(&tasks).expect("role");
        std::fs::write(
            tasks.join("main.yml"),
            format!(
                "- name: a file of its own\n  copy: {{content: \"{own}\\n\", dest: /srv/{own}}}\n"
            ),
        )
        .expect("role");
        let name = format!("twin-{own}");
        let text = recipe
            .replace("twin-a", &name)
            .replace("roles: [shared]", &format!("roles: [shared, {own}]"));
        std::fs::write(project.join(format!("images/{name}.yml")), text).expect("recipe");
    }
    project
}

/// What the jobs printed (`slurm-*.out` in the folder sbatch ran in), for a failing test.
fn job_logs(work: &Path) -> String {
    let mut logs = String::new();
    for entry in std::fs::read_dir(work).expect("work").flatten() {
        if entry.file_name().to_string_lossy().starts_with("slurm-") {
            logs += &std::fs::read_to_string(entry.path()).unwrap_or_default();
        }
    }
    logs
}

/// `report.json` of `image`, built by a job run in `work`.
fn report(work: &Path, image: &str) -> Value {
    let path = work.join(format!("out/{image}/report.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}\n{}", path.display(), job_logs(work)));
    serde_json::from_str(&text).expect("report.json")
}

#[test]
fn a_slurm_array_builds_the_images_and_each_shared_layer_once() {
    require_root();
    let work = tempfile::Builder::new()
        .prefix("imgbuild-slurm-")
        .tempdir_in("/var/tmp")
        .expect("work dir");
    let work = work.path();
    let registry = start_registry(true);
    let auth = auth_file(work, &registry.host, PASSWORD);
    let cluster = Cluster::start(&work.join("slurm"));
    let project = project(work);
    // The first job's node-local cache holds the tests' debootstrapped base already; the array's
    // tasks start empty and take the base from the registry too.
    shared_base_cache(&work.join(format!("node-{FIRST_JOB_ID}")));
    let cache = format!("docker://{}/site/slurm-cache", registry.host);
    let submitted = cluster
        .command(&repo_root().join("contrib/slurm/submit").to_string_lossy())
        .args(["twin-a", "twin-third", "twin-fourth"])
        .current_dir(work)
        .env("SBATCH_WAIT", "1")
        .env("IMGBUILD", env!("CARGO_BIN_EXE_imgbuild"))
        .env("IMGBUILD_PROJECT", &project)
        .env("IMGBUILD_NODE_CACHE", work.join("node-%j"))
        .env("IMGBUILD_CACHE_FROM", &cache)
        .env("IMGBUILD_CACHE_TO", &cache)
        .env("IMGBUILD_BUILD_ARGS", "--no-verify")
        .env("REGISTRY_AUTH_FILE", &auth)
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .output()
        .expect("contrib/slurm/submit");
    assert!(
        submitted.status.success(),
        "{}{}\njobs:\n{}\ndaemons:\n{}",
        stdout(&submitted),
        stderr(&submitted),
        job_logs(work),
        cluster.logs()
    );
    let first = report(work, "twin-a");
    let expected = |list: &[(&str, &'static str)]| -> Vec<(String, &'static str)> {
        list.iter().map(|(r, s)| (r.to_string(), *s)).collect()
    };
    assert_eq!(
        common::layer_sources(&first)[1],
        ("shared".to_owned(), "built"),
        "{first:#}"
    );
    for (image, own) in [("twin-third", "third"), ("twin-fourth", "fourth")] {
        let report = report(work, image);
        let wanted = [("base", "registry"), ("shared", "registry"), (own, "built")];
        assert_eq!(
            common::layer_sources(&report),
            expected(&wanted),
            "{image}: {report:#}"
        );
        // The shared layers are the first job's, byte for byte.
        let (theirs, ours) = (&first["layers"], &report["layers"]);
        for at in 0..2 {
            assert_eq!(ours[at]["digest"], theirs[at]["digest"], "{image}");
        }
    }
    // Each job had its own cache folder: the array's tasks never saw the first job's.
    let caches = std::fs::read_dir(work)
        .expect("work")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("node-"))
        .count();
    assert_eq!(caches, 3, "{}", job_logs(work));
}
