"""An audit's report as the notebooks show it, in their language: what it found (one row per
finding, with its fix) and the verdict in one line.

:mod:`resume_audit` (the audit) writes English; its findings keep their facts as data (the fault, the
RNGs, the numbers), so the Chinese edition says every line in Chinese here, through the
templates below (keyed by the finding's kind; the tables' own words are :mod:`course_lib.lab.i18n`'s).
"""
from __future__ import annotations

import pandas as pd
from resume_audit.findings import undone_list
from resume_audit.report import Report

from course_lib.lab.i18n import resolve, tr

FAULT_ZH = {"sigkill": "第 {at} 步开始时{who}被 SIGKILL 杀掉", "sigterm": "第 {at} 步开始时{who}收到 SIGTERM",
            "during-save": "第 {at} 步之后的保存写到一半时{who}被 SIGKILL 杀掉",
            "during-commit": "第 {at} 步之后的保存放到位时（重命名之前或复制到一半）{who}被 SIGKILL 杀掉",
            "after-save": "第 {prev} 步刚保存完、第 {at} 步开始时{who}被 SIGKILL 杀掉",
            "before": "{role}的第 {n} 个文件事件（{op} {path}，第 {at} 步）发生之前被 SIGKILL 杀掉",
            "torn": "{role}的第 {n} 个文件事件（{op} {path}，第 {at} 步）写的文件只留下一半时被 SIGKILL 杀掉",
            "power-data": "{role}的第 {n} 个文件事件（{op} {path}，第 {at} 步）之前断电，没有 fsync 的数据丢失",
            "power-names": "{role}的第 {n} 个文件事件（{op} {path}，第 {at} 步）之前断电，"
                           "所在文件夹没有 fsync 的创建和重命名被撤销"}
RNG_ZH = {"python": "Python 的 random", "numpy": "NumPy 的全局随机数生成器", "torch": "torch 的 CPU 随机数生成器",
          "cuda": "CUDA 的随机数生成器"}
ATOMIC = "先把检查点写进临时文件并 fsync，再用 os.replace 覆盖旧检查点（新的写完之前，旧检查点一直有效）"
POSITION = "把 epoch 内的位置（步数）存进检查点，续训时跳过已经训练过的批次"
ORDER = ("恢复数据的打乱顺序：DataLoader 生成器的状态（generator.get_state()），"
         "或用续训所在的 epoch 调用 sampler.set_epoch(epoch)")
SIGTERM = "收到 SIGTERM 时只设一个标志；在这一步结束时保存检查点，然后退出"
SNAPSHOT = ("交给异步保存的必须是快照（把模型和优化器 state_dict() 里的每个张量都复制一份，比如用 copy.deepcopy），"
            "或者在训练线程里保存")
FSYNC_FILE = "检查点的每个文件在重命名到位之前都要 fsync（f.flush(); os.fsync(f.fileno())），然后再 fsync 所在文件夹"
FSYNC_DIR = ("把检查点重命名到位之后，fsync 所在文件夹（fd = os.open(文件夹, os.O_RDONLY); os.fsync(fd); "
             "os.close(fd)）")
DETERMINISTIC = "torch.use_deterministic_algorithms(True)、固定线程数、给 DataLoader 的工作进程设好种子"
# kind -> (line, fix) in Chinese; the placeholders are the English template's
ZH = {
    "unseeded-init": ("两次从未中断的训练在第一步之前参数就不同：模型初始化没有设种子",
                      "在构建模型之前调用 torch.manual_seed(seed)"),
    "unseeded-data": ("两次从未中断的训练，第 {step} 步的批次不同：数据集或数据顺序没有设种子",
                      "给构建和打乱数据的代码设种子（torch.manual_seed、random.seed、np.random.seed，"
                      "或带种子的 DataLoader 生成器）"),
    "unseeded-rng": ("两次从未中断的训练参数和批次都相同，第 {step} 步时{rngs}的状态却不同",
                     "训练开始时给每一步用到的随机数生成器都设好种子"),
    "unseeded-workers": ("两次从未中断的训练，第 {step} 步的批次不同，而这些批次来自 {workers} 个 DataLoader 工作进程："
                         "工作进程里的随机性没有设种子",
                         "在 worker_init_fn 里用 torch.initial_seed() 给工作进程用到的随机数生成器设种子"
                         "（torch 只替每个工作进程设好 random 和 NumPy 的全局生成器，不管你自己建的生成器），"
                         "并给 DataLoader 一个带种子的生成器"),
    "nondeterministic": ("两次从未中断的训练参数、批次和随机数生成器都相同，第 {step} 步的 {what} 却不同："
                         "计算本身不是确定性的", DETERMINISTIC),
    "nondeterministic-cuda": ("两次从未中断的训练参数、批次和随机数生成器都相同，第 {step} 步的 {what} 却不同："
                              "CUDA 的算子默认不是确定性的",
                              "在 CUDA 启动之前设置 CUBLAS_WORKSPACE_CONFIG=:4096:8，"
                              "调用 torch.use_deterministic_algorithms(True)，并设 torch.backends.cudnn.benchmark = False；"
                              "给 DataLoader 的工作进程设好种子"),
    "runs-differ": ("{what}", "先让同一条命令的两次训练成为同一次训练，再审计续训"),
    "set-epoch": ("DistributedSampler 每个 epoch 的顺序都一样（Rank {rank} 的 {passes} 次遍历都是 epoch {epoch}）："
                  "从没调用 set_epoch",
                  "在每个 epoch 开始时调用 sampler.set_epoch(epoch)"),
    "sampler-seed": ("各个 Rank 的 DistributedSampler 种子不同（{seeds}）：每个 Rank 打乱出另一种排列，"
                     "各自分到的数据互相重叠，一个 epoch 里有的样本根本没训练到",
                     "所有 Rank 的 DistributedSampler 用同一个种子（本次训练的种子），不要从 Rank 号推出种子"),
    "not-atomic": ("{fault}后，续训没能启动（{error}）：它读的正是那个保存到一半被故障截断的检查点", ATOMIC),
    "not-atomic-read": ("{fault}后，续训读不了 {target}（{error}）：它需要的正是那个保存到一半被截断的检查点", ATOMIC),
    "not-atomic-lost": ("{fault}后，续训从第 {resumed} 步接着训练，而不是从第 {newest} 步的检查点："
                        "故障正好发生在新的保存替换它的时候，新旧两个检查点都没留下（白费了 {lost} 步）",
                        ATOMIC),
    "did-not-start": ("{fault}后，续训没能启动：{error}", "让续训只读取完整的检查点，并修正上面的错误"),
    "hung": ("{fault}：训练在 {seconds:.0f} 秒内没有结束，被杀掉（某个 Rank 在等一个已经死掉的同伴？）",
             "同伴丢失时让每个 Rank 都报错退出（靠集合通信的超时），启动器才能重启整个作业"),
    "started-over": ("{fault}后，续训从第 0 步重新开始，而第 {newest} 步的检查点是完整的："
                     "根本没有加载检查点（白费了 {lost} 步）",
                     "训练启动时加载最新的检查点"),
    "older": ("{fault}后，续训从第 {resumed} 步接着训练，可第 {newest} 步的检查点完好地留在磁盘上：续训没有用最新的检查点"
              "（白费了 {lost} 步）",
              "从最新的完整检查点续训，不管它在哪个文件里（按步数排序，不要按文件名："
              "按字符串比，'step-9' 排在 'step-18' 后面；"
              "收到 SIGTERM 时存下的检查点也算）"),
    "unaligned": ("{fault}后，续训起点的参数不是从未中断的训练中的任何一个状态", "从本次训练的检查点加载模型的 state_dict"),
    "sigterm-no-save": ("{fault}（集群调度系统的抢占）：脚本没有保存就停下了；续训从第 {resumed} 步接着训练"
                        "（白费了 {lost} 步）",
                        SIGTERM),
    "sigterm-ignored": ("{fault}：{grace:.0f} 秒后脚本还在运行，被杀掉；续训从第 {resumed} 步接着训练（白费了 {lost} 步）",
                        SIGTERM),
    "snapshot": ("{fault}后，续训读的检查点是由一个异步保存（线程 {thread}）在训练继续进行时，"
                 "直接拿正在变化的模型和优化器写的："
                 "它在被要求保存的那一步旁边，装着后面几步的状态，所以续训在第 {step} 步出现分歧", SNAPSHOT),
    "snapshot-mix": ("{fault}后，续训开始时的参数是第 {params} 步的，优化器状态却是第 {state} 步的："
                     "这个检查点不是同一步的快照", SNAPSHOT),
    "optimizer": ("{fault}后，续训时（第 {resumed} 步）的优化器状态与从未中断的训练不同",
                  "把 optimizer.state_dict() 和模型一起保存并加载回来（本章三样中的第二样）"),
    "scheduler": ("{fault}后，第 {step} 步用的学习率是 {ours}，从未中断的训练用的是 {theirs}",
                  "把学习率调度器的 state_dict() 存进检查点并加载回来"),
    "scheduler-offset": ("{fault}后，第 {step} 步用的学习率是 {ours}，这是从未中断的训练从第 {then} 步起用的学习率："
                         "学习率调度器被放到了它原来位置的后面（按 epoch 走的学习率调度器按步数快进了）",
                         "保存并加载学习率调度器的 state_dict()；如果要快进，它原来走了几次就走几次"
                         "（按 epoch 走的学习率调度器按 epoch 数）"),
    "scaler": ("{fault}后，第 {step} 步用的 GradScaler 缩放系数是 {ours}，从未中断的训练用的是 {theirs}："
               "它的状态没有保存（缩放系数决定哪些步溢出、被跳过）",
               "把 scaler.state_dict() 存进检查点并加载回来"),
    "hyper": ("{fault}后，第 {step} 步时优化器的设置（学习率以外的）不同", "用 load_state_dict 恢复优化器，包括它的参数组"),
    "rng": ("{fault}后，续训的第一步时{rngs}的状态不同（Rank {ranks}）：它从来没有被恢复过",
            "把每个 Rank 的 torch.get_rng_state()（以及 random.getstate()、np.random.get_state()、CUDA 的状态）存进检查点，"
            "在下一步之前恢复"),
    "rng-reseeded": ("{fault}后，续训的第一步时{rngs}的状态不同（Rank {ranks}）：加载检查点之后又重新设了种子，"
                     "而不是恢复保存的状态",
                     "恢复保存的随机数生成器状态（torch.set_rng_state），不要重新设种子"),
    "rng-drawn": ("{fault}后，续训的第一步时{rngs}的状态不同（Rank {ranks}）：恢复之后、这一步之前又抽取了随机数"
                  "（每次 `iter(loader)` 都会从 torch 的随机数生成器抽一个数）",
                  "最后再恢复随机数生成器，紧挨着下一步；或者给 DataLoader 一个它自己的生成器"),
    "rng-shuffle": ("{fault}后，续训的第一步时 torch 的 CPU 随机数生成器的状态不同（Rank {ranks}），批次也不同："
                    "这个生成器从来没有恢复，而没有自己生成器的 DataLoader 正是用它来打乱数据",
                    "把 torch.get_rng_state() 存进检查点，在这个 epoch 开始遍历 DataLoader（iter(loader)）之前恢复"
                    "（或者给 DataLoader 一个它自己的生成器，并保存它的状态）"),
    "rng-rank": ("{fault}后，{rngs}的状态在 Rank {bad} 上不同、在 Rank {good} 上相同："
                 "并不是每个 Rank 的随机数生成器都保存并恢复了",
                 "每个 Rank 各自保存、恢复自己的随机数生成器状态"),
    "accumulation": ("{fault}后，续训从第 {resumed} 步的检查点接着训练，而这个检查点是在第 {step} 步已经累积了 {pending} 次"
                     "反向传播之后保存的：这些梯度丢了，第 {step} 步累积的微批次也和从未中断的训练不同",
                     "在一个优化器步结束时保存（optimizer.step() 和 zero_grad() 之后），或者把梯度累积的计数和已经累积的梯度"
                     "一起存进检查点"),
    "position": ("{fault}后，续训回到了所在 epoch 的开头：第 {step} 步又训练了第 {other} 步的批次（重复了 {n} 步）",
                 POSITION),
    "epoch": ("{fault}后，续训把已经训练完的那个 epoch 又训练了一遍：第 {step} 步训练的是第 {other} 步的批次，"
              "退回了一个 epoch（{n} 步）",
              "保存的 epoch 是刚训练完的那个：应从下一个（epoch + 1）开始续训"),
    "skip": ("{fault}后，续训跳过了 {n} 步的批次：第 {step} 步训练的是第 {other} 步的批次", POSITION),
    "order-generator": ("{fault}后，第 {step} 步训练的批次与从未中断的训练不同：这一轮遍历开始时，DataLoader 自己的生成器"
                        "处在另一个状态（它没有恢复）",
                        "把 DataLoader 生成器的状态（generator.get_state()）存进检查点，"
                        "在这一轮遍历接着进行之前用 set_state 恢复；或者用 epoch 给它设种子"),
    "order": ("{fault}后，第 {step} 步训练的批次与从未中断的训练不同，而审计看得到的随机数生成器都相同：数据顺序没有恢复",
              ORDER),
    "order-sampler": ("{fault}后，第 {step} 步训练的批次与从未中断的训练不同（它的 DistributedSampler 在 epoch {ours}，"
                      "从未中断的训练在 epoch {theirs}）：数据顺序没有恢复", ORDER),
    "data-unseen": ("{fault}后，参数、优化器状态、学习率和随机数生成器都相同，第 {step} 步的梯度却不同："
                    "问题在数据顺序或 epoch 内的位置（审计没有看到 DataLoader）", POSITION + "；并恢复数据顺序"),
    "unseen": ("{fault}后，参数、缓冲区、优化器状态、学习率、随机数生成器和批次都相同，第 {step} 步的 {what} 却不同："
               "是审计看不到的状态（脚本自己持有的生成器、计数器），或者结果不确定的算子",
               "把一步用到的所有状态都保存下来（生成器用 get_state()）"),
    "buffers": ("{fault}后，第 {step} 步时模型的缓冲区（BatchNorm 的滑动平均统计量，以及任何注册的缓冲区）"
                "与从未中断的训练不同，"
                "而参数、优化器状态和批次都相同：缓冲区没有恢复",
                "保存 model.state_dict()（它包含缓冲区），不要只存参数；加载时用 strict=True"),
    "ema": ("{fault}后，第 {step} 步时的平均模型（EMA/SWA）与从未中断的训练不同，而训练的参数相同：它没有保存和恢复",
            "把平均模型的 state_dict()（包括 n_averaged）存进检查点并加载回来"),
    "steps": ("{fault}后，续训后的训练一共走了 {ours} 步，从未中断的训练走了 {theirs} 步",
              "从保存的那一步的下一步续训，并在从未中断的训练结束的地方结束"),
    "final": ("{fault}后，最终参数与从未中断的训练不同", "见上面几行"),
    "crashed": ("{fault}后，续训后的训练以退出码 {code} 结束：{error}", "修正上面的错误"),
    "teardown": ("{fault}后，续训后的训练跑完了每一步，结果逐位相同，随后有一个进程在 Python 退出的过程中被中止"
                 "（退出码 {code}：{error}）：续训本身没有问题，但作业会被当作失败",
                 "destroy_process_group() 返回后，让每个进程用 os._exit(0) 退出：Python 退出时通信组的线程还在运行，"
                 "进程就会被中止（pytorch/pytorch#179291）"),
    "undelivered-no-step": ("故障“{fault}”没有发生：这次启动一步都没有训练（退出码 {code}）", ""),
    "undelivered-no-save": ("故障“{fault}”没有发生：这次启动中 Rank {rank} 在第 {at} 步之后没有保存", ""),
    "undelivered-no-commit": ("故障“{fault}”没有发生：这次启动中 Rank {rank} 在第 {at} 步的保存之后"
                              "没有重命名或复制任何文件", ""),
    "undelivered-ended": ("故障“{fault}”没有发生：这次启动在第 {reached} 步就结束了（退出码 {code}）", ""),
    "undelivered-no-event": ("故障“{fault}”没有发生：从未中断的训练没有这个文件事件，或者这次训练没有走到它", ""),
    "unseen-write": ("审计没有看到是什么写了训练文件夹里的 {files}"
                     "（不是 Python 代码，也不是 torch.save、safetensors、pickle 或 "
                     "NumPy：是别的程序，或者某个库的本地代码），所以没法在写这些文件时制造故障，也说不出断电会让它们丢掉什么",
                     "用 Python 写检查点，或者单独审计那个写文件的程序；在那之前，这个结论不包括这些文件"),
    "unsynced-file": ("{fault}后，第 {newest} 步的检查点丢了：{files} 没有 fsync，断电会让没有 fsync 的数据丢失"
                      "（续训从第 {resumed} 步接着训练，白费了 {lost} 步）", FSYNC_FILE),
    "unsynced-file-read": ("{fault}后，续训没能启动（{error}）：{files} 没有 fsync，断电后它们变成了空文件或者变短了",
                           FSYNC_FILE),
    "unsynced-dir": ("{fault}后，第 {newest} 步的检查点丢了：{names} 之后所在文件夹没有 fsync，断电会把这些操作撤销"
                     "（续训从第 {resumed} 步接着训练，白费了 {lost} 步）", FSYNC_DIR),
    "unsynced-dir-read": ("{fault}后，续训没能启动（{error}）：{names} 之后所在文件夹没有 fsync，断电把这些操作撤销了",
                          FSYNC_DIR),
    "rng-unused": ("续训后{rngs}的状态不同，但没有任何代码从中抽取随机数：训练仍然逐位相同", ""),
}
VERDICT_ZH = {"deterministic": ("不确定：脚本本身不是确定性的，两次从未中断的训练就不同，"
                                "任何续训都不可能逐位相同（先修正这一条）"),
              "inconclusive": ("无法下结论：审计没能看到或没能制造它需要的一切（见上）；"
                               "已经发生的 {n} 次故障之后续训都逐位相同，"
                               "但这说明不了其余的部分"),
              "durable": "经不起断电：每一次杀进程之后续训都逐位相同，但断电会让一个完整的检查点丢失（见上）{strict}",
              "exact": "逐位相同：{n} 次故障，每一次之后的续训都与从未中断的训练逐位相同",
              "lost": "逐位相同，但有白费的训练：{n} 次故障之后的续训都逐位相同，但其中 {k} 次之后共有 {lost} 步"
                      "重新训练了一遍{strict}",
              "habit": "不是逐位相同：尽管每次故障之后的续训都逐位相同，训练本身却有问题（见上）",
              "runs": "不是逐位相同：{runs} 次被中断的训练中，有 {bad} 次没能与从未中断的训练逐位相同"}


def _tidy(text: str) -> str:
    """A space between Chinese and Latin words, none after a Chinese comma, never two."""
    return text.replace("  ", " ").replace("， ", "，").replace("（ ", "（").strip()


def fault_zh(fault: dict) -> str:
    who = "所有 Rank " if fault["rank"] is None else f" Rank {fault['rank']} "
    role = {"main": "主进程", "proc": "其他进程"}.get(fault.get("who"), f" {fault.get('who', '')} ".replace("rank", "Rank "))
    return _tidy(FAULT_ZH[fault["kind"]].format(at=fault["at"], prev=fault["at"] - 1, who=who, role=role,
                                                n=fault.get("n"), op=fault.get("op"), path=fault.get("path")))


def rngs_zh(names) -> str:
    said = [RNG_ZH.get(n.removeprefix("rng."), n) for n in names]
    return " " + (said[0] if len(said) == 1 else "、".join(said[:-1]) + "和" + said[-1])


UNDONE_ZH = {"create": "创建 {0}", "rename": "把 {0} 重命名为 {1}", "remove": "删除 {0}", "mkdir": "创建文件夹 {0}",
             "rmdir": "删除文件夹 {0}"}


def names_zh(ops: list) -> str:
    """What a power cut undid, in Chinese."""
    return undone_list(ops, UNDONE_ZH, "（另有 {n} 处）").replace(", ", "、")


def finding_line(finding, lang: str) -> tuple[str, str]:
    """A finding's line and fix in ``lang``."""
    if lang != "zh":
        return finding.line, finding.fix
    line, fix = ZH[finding.kind]
    return _tidy(finding.render(line, fault_zh, rngs_zh, names_zh)), fix


def audit_findings(report: Report, lang: str | None = None) -> pd.DataFrame:
    """What the audit found, in the order to fix it: each finding, after how many faults it was
    seen, its fix. Notebook 05, §5."""
    lang = resolve(lang)
    rows = []
    for f in report.findings:
        line, fix = finding_line(f, lang)
        rows.append({tr("finding", lang): line, tr("faults", lang): f.count, tr("fix", lang): fix or "-"})
    if not rows:
        rows.append({tr("finding", lang): tr("nothing: every fault resumed bit-identically", lang),
                     tr("faults", lang): report.faults, tr("fix", lang): "-"})
    return pd.DataFrame(rows, index=pd.RangeIndex(1, len(rows) + 1))


def audit_verdict(report: Report, lang: str | None = None) -> str:
    """The audit's verdict in one line (its exit code: 0 only when exact). Used by exercise 05.audit's check."""
    if resolve(lang) != "zh":
        return report.verdict
    case, values = report.verdict_case()
    return VERDICT_ZH[case].format(**values, strict="（--strict：这也算不通过）" if report.strict else "")
