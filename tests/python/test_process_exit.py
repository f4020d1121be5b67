"""Process exit after backward passes on the device.

PyTorch's autograd thread for the device frees a finished backward pass (and the Python objects
it holds) a moment after backward() returns. If the interpreter is finalizing by then, that
thread cannot take the GIL and the process aborts ("terminate called without an active
exception"). torch_trn waits for the thread at exit; these tests make the late free certain.
"""
from helpers import run_python

# SlowToFree is held by the backward pass (queue_callback keeps it until the pass is freed). When
# the autograd thread is the one that frees it, __del__ holds that thread for 0.5 s while the main
# thread exits right away: the free lands inside interpreter shutdown unless exit waits for it.
#
# Who frees the pass is a race in PyTorch's engine: the device thread wakes the main thread, then
# drops its own reference; it frees the pass only when the main thread gets there first. The
# scenario stacks the race: every thread shares one CPU and the device thread runs at nice 19, so
# waking the main thread preempts it (a late free within ~0.2 s; without this, CI once saw none in
# 500 trials). Without the exit barrier it aborted 3 of 3 runs.
LATE_FREE = """
    import os
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # before any thread starts
    import sys, threading, time
    import torch, torch_trn
    from torch.autograd import Variable

    freed_elsewhere = threading.Event()

    class SlowToFree:
        def __call__(self):
            pass

        def __del__(self):
            if threading.current_thread() is not threading.main_thread():
                freed_elsewhere.set()
                time.sleep(0.5)

    def queue_slow_free(grad_inputs, grad_outputs):  # runs on the autograd device thread
        os.setpriority(os.PRIO_PROCESS, 0, 19)  # this thread only (Linux)
        Variable._execution_engine.queue_callback(SlowToFree())

    deadline = time.monotonic() + 60
    trial = 0
    while time.monotonic() < deadline:
        trial += 1
        x = torch.ones(3, device="neuron", requires_grad=True)
        y = (x * 2).sum()
        y.grad_fn.register_hook(queue_slow_free)
        y.backward()
        assert x.grad.cpu().tolist() == [2.0, 2.0, 2.0]
        del x, y
        if freed_elsewhere.wait(0.002):
            print("LATE FREE at trial", trial, flush=True)
            sys.exit(0)
    print("the autograd thread never freed a pass", flush=True)
"""


def test_exit_waits_for_the_autograd_thread_to_free_the_last_backward_pass():
    r = run_python(LATE_FREE)
    assert "LATE FREE" in r.stdout, f"the scenario did not happen:\n{r.stdout}\n{r.stderr[-2000:]}"
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stderr[-2000:]}"
    assert "terminate called" not in r.stderr


def test_exit_right_after_import_is_clean_in_every_mode():
    # The import's own warm-up backward pass must leave nothing that needs the GIL late.
    for mode in ("eager", "adaptive", "compile"):
        r = run_python("import torch_trn", env={"NEURON_MODE": mode})
        assert r.returncode == 0, f"{mode}: exit {r.returncode}\n{r.stderr[-2000:]}"
        assert r.stderr == "", f"{mode}: {r.stderr[-2000:]}"
