"""course_lib: the real code behind the "keeping long training runs alive" notebooks.

Laid out by station, one folder per notebook's concern, in rings that import only inwards
(``pyproject.toml``'s import contracts, checked by the tests):

    data/         stations 1-2 (notebooks 01, 02): reviews -> clean, deduplicated -> tokens
    ddp/          station 3 (notebook 03): one process per rank, DDP, the training loop
    checkpoint/   stations 4-5 (notebooks 04, 05): commit protocol, resume, real kills
    watch/        stations 4-5: the per-step ledger, TensorBoard, compare two runs
    _runtime/     process plumbing: starting ranks, their output, platforms, torchrun lines
    config.py, paths.py, predict.py      the run's settings, the paths you hand it, its model
    ---- the core above: the real DDP, checkpoint and resume code; it imports nothing below ----
    beyond/       beyond the chapter: the invariant reduction, survivors, elastic groups, save advice
    audit/        any training script judged by real faults (python -m course_lib audit -- COMMAND)
    lab/          the notebooks' views: widgets, plots, tables, translations, drills
    textbook/     the chapter's code reconstructed, run for real;  exercises/  checks with real kills
    cli.py, pipeline.py                  the front doors: python -m course_lib ...

Where each idea lives (``module:name``; ``tests/test_structure.py`` checks that each exists):

    one process per rank       course_lib.ddp.launch:launch -> course_lib._runtime.rank_start:start_ranks
    one rank                   course_lib.ddp.launch:run_rank -> course_lib.ddp.launch:train_with_ddp
    DDP wraps the model        course_lib.ddp.train:Trainer.__init__
    one optimizer step         course_lib.ddp.train:Trainer._run_batch
    the sampler's position     course_lib.ddp.sampling:ResumableDistributedSampler.set_position
    what a checkpoint holds    course_lib.ddp.train:Trainer.stateful
    save                       course_lib.ddp.train:Trainer._save_checkpoint -> course_lib.checkpoint.store:commit
    commit                     course_lib.checkpoint.store:commit
    the newest valid one       course_lib.checkpoint.store:latest_valid
    resume                     course_lib.ddp.train:Trainer.resume -> course_lib.checkpoint.resume:restore
    every RNG of a rank        course_lib.checkpoint.resume:rng_state
    a real kill                course_lib.checkpoint.faults:FaultInjector.before_step
    a kill inside a save       course_lib.checkpoint.faults:FaultInjector.writer
    a preemption (SIGTERM)     course_lib.ddp.training:GracefulStop -> course_lib.ddp.train:Trainer._decide
    why training stopped       course_lib.ddp.outcome:Outcome -> course_lib.ddp.outcome:exit_code
    the ledger, TensorBoard    course_lib.watch.monitor:Ledger, course_lib.watch.monitor:TensorBoardLogger
    are two runs the same?     course_lib.watch.compare:compare_runs
    the invariant reduction    course_lib.beyond.invariant:InvariantStep
    the survivors' save        course_lib.beyond.invariant_trainer:emergency_save
    an elastic group           course_lib.beyond.elastic.regroup:Member._regroup
    audit any script           course_lib.audit.auditor:audit -> course_lib.audit.probe.course_lib_audit_probe:Probe

Import the submodule you need; importing the package itself is cheap.
"""
__version__ = "0.1.0"
