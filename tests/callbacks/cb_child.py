"""A tiny real training run in its own process, for the crash-safety, disk-full and rank tests.

Usage: python cb_child.py SCENARIO LOGDIR [STEPS]

Prints ``RECORDED <step> <wall time>`` after TrainMonitor has handled each step (so the parent knows what was
recorded and when), then ``DONE`` if training finished.
"""

import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main():
    scenario, logdir = sys.argv[1], sys.argv[2]
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    if scenario == "disk_full":
        import resource

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)     # a write past the limit fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (40000, 40000))
    if scenario == "sigint_user_handler":
        def user_handler(signum, frame):
            print("USER HANDLER RAN", flush=True)
            raise KeyboardInterrupt
        signal.signal(signal.SIGINT, user_handler)

    import logging

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    import mindspore as ms
    from mindspore import nn
    from mindspore.train import Callback, Model

    from cb_helpers import classification_data, dense_net
    from tb_mindspore_callbacks import MonitoredTrainCell, TrainMonitor

    ms.set_context(mode=ms.GRAPH_MODE)
    if scenario == "ranks":
        from mindspore.communication import init

        init()

    class Trigger(Callback):
        def on_train_step_end(self, run_context):
            step = run_context.original_args().cur_step_num
            print("RECORDED %d %.6f" % (step, time.time()), flush=True)
            if scenario.startswith("sigint") and step == 7:
                os.kill(os.getpid(), signal.SIGINT)
            elif scenario == "sigterm" and step == 7:
                os.kill(os.getpid(), signal.SIGTERM)
            elif scenario == "kill9":
                time.sleep(0.1)

    kwargs = {"flush_secs": 1.0 if scenario == "kill9" else 60.0}
    if scenario == "disk_full":
        kwargs["debug"] = "all"
        kwargs["debug_freq"] = 1
    # "ranks": two runs, default (rank 0 only) into LOGDIR/default, all_ranks=True into LOGDIR/all.
    runs = [(os.path.join(logdir, "default"), {}), (os.path.join(logdir, "all"), {"all_ranks": True})] \
        if scenario == "ranks" else [(logdir, {})]
    for run_dir, extra in runs:
        net = dense_net()
        opt = nn.SGD(net.trainable_params(), learning_rate=0.05)
        loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        model = Model(MonitoredTrainCell.wrap(net, loss_fn, opt))
        monitor = TrainMonitor(run_dir, collect_freq=1, registry=None, **dict(kwargs, **extra))
        model.train(1, classification_data(steps), callbacks=[monitor, Trigger()])
        print("DONE errors=%d" % monitor.errors, flush=True)


if __name__ == "__main__":
    main()
