"""What a command's start-up loads: each CLI call pays its imports, so a refused run stops before the
table and analysis libraries, and sizing a model on the meta device loads no compiler."""
import subprocess
import sys


def test_a_refused_run_loads_no_table_or_analysis_library(tmp_path):
    """The CLI's start-up stays small: a run refused for a bad value (the commonest CLI call in a
    sweep of typos) stops before pandas, scipy, sklearn or matplotlib are imported (each a
    fraction of a second of every such call)."""
    probe = ("import sys, runpy\n"
             "sys.argv = ['fedcluster', 'rounds=0', 'hydra.run.dir=' + sys.argv[1]]\n"
             "try:\n    runpy.run_module('fedcluster.command.cli', run_name='__main__')\n"
             "except SystemExit as e:\n    code = e.code\n"
             "heavy = [m for m in ('pandas', 'scipy', 'sklearn', 'matplotlib') if m in sys.modules]\n"
             "print('exit', code, 'loaded', heavy)\n")
    out = subprocess.run([sys.executable, "-c", probe, str(tmp_path / "r")], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert "rounds=0 is out of range" in out.stderr, out.stderr
    assert out.stdout.strip() == "exit 2 loaded []", out.stdout   # 2: bad input
    assert not (tmp_path / "r").exists()


def test_the_meta_copy_that_sizes_a_model_draws_no_weights():
    """assemble.count_parameters builds a copy on the meta device: shapes only. Drawing its Xavier
    weights there went through torch's reference ops and loaded torch._dynamo (1-2 s of each run's
    start-up on the looped engine, which never needs it); the real model still gets its draws."""
    probe = ("import sys, torch\n"
             "from fedcluster.assemble import count_parameters\n"
             "from fedcluster.models.mlp import MLP\n"
             "n = count_parameters(lambda: MLP(in_shape=(8,), num_outputs=3, hidden=[4], init='xavier'))\n"
             "print(n, 'torch._dynamo' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == [str(8 * 4 + 4 + 4 * 3 + 3), "False"], out.stdout + out.stderr


def test_sizing_a_cnn_loads_no_compiler():
    """A CNN's parameter count and activation size, taken before its data is built, run no convolution on the
    meta device (that loads torch._dynamo: 1.2-1.8 s of each CNN run's start-up, measured 2026-12-04 on a
    3-round CLoVE label skew 3 run, whose looped training never needs it)."""
    probe = ("import sys, torch\n"
             "from fedcluster.assemble import activation_numel, count_parameters\n"
             "from fedcluster.models.cnn import GenConvNet\n"
             "build = lambda: GenConvNet(in_shape=(1, 28, 28), num_outputs=10)\n"
             "n = count_parameters(build)\n"
             "print(n, activation_numel(build, (1, 28, 28), n) > 0, 'torch._dynamo' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    from fedcluster.models.cnn import GenConvNet
    real = sum(p.numel() for p in GenConvNet(in_shape=(1, 28, 28), num_outputs=10).parameters())
    assert out.stdout.split() == [str(real), "True", "False"], out.stdout + out.stderr
