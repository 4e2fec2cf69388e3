"""A self-check quiz per notebook: the chapter's takeaways and what the learner saw in the notebook.

``quiz("04")`` returns an ipywidgets box, one question per row: choose an answer, click
"check", read why. Every option has its explanation, the right one too, shown only after a
choice: an option is a short answer, never its own argument. The options are shuffled, with a
seed of (notebook, question number), so the order is the same in every run and in both editions.

What a question may state: the chapter's own numbers and what follows from them by arithmetic,
what the learner saw in a cell of the notebook (asked about, not quoted: a notebook run with other
parameters shows other figures), and a benchmark figure only with the file it comes from
(docs/exercises.md, "Quizzes": what the tests check).

Offline; driven in the tests by setting ``.value`` and calling ``.click()`` (ipywidgets' own
way), no browser needed.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

import ipywidgets as W

from course_lib.lab.i18n import both, resolve, tr


@dataclass(frozen=True)
class Option:
    """One answer of a question: its text and why it is right or wrong, each as (English, Chinese),
    so that one shuffle orders both editions (their Chinese: :mod:`course_lib.lab.zh.quiz`)."""
    text: tuple[str, str]
    why: tuple[str, str]
    right: bool = False


def right(text: str, why: str) -> Option:
    return Option(both(text), both(why), True)


def wrong(text: str, why: str) -> Option:
    return Option(both(text), both(why))


# notebook -> [((question in English, in Chinese), [Option, ...]), ...]; the right option is written
# first here and shuffled when shown (options())
QUESTIONS: dict[str, list[tuple[tuple[str, str], list[Option]]]] = {
    "01": [
        (both("Section 3 ran the chapter's set() on every cleaned review. What did it remove?"),
         [right("only copies identical to the character",
                "set() compares whole strings. A re-post with one word changed is another string and stays; section 4 "
                "found such pairs among the texts set() kept."),
          wrong("every copy, lightly edited ones too",
                "Cleaning only normalises markup, entities and spaces. One changed word makes another string, which "
                "set() keeps: that is what section 4 is for."),
          wrong("nothing: the cleaned texts are unique",
                "Cleaning makes copies *more* alike, not less: section 3's table shows fewer unique texts than reviews.")]),
        (both("What does set(cleaned_data) lose that a training set needs?"),
         [right("the labels and a repeatable order",
                "A set holds texts only, so each text's label is gone, and its order comes from string hashes that "
                "Python salts anew in every process. exact_dedup keeps both."),
          wrong("the punctuation and the upper case",
                "set() does not change a text; it keeps one of each identical group as it is."),
          wrong("nothing: it only drops the copies",
                "It drops more than copies: the label of every text, and any fixed order.")]),
        (both("Why deduplicate before splitting into train and held-out reviews?"),
         [right("so that no review has a copy on each side",
                "A copy in training and one held out makes the held-out score measure memory. Near-duplicates can still "
                "leak, which section 7 counts."),
          wrong("because fewer reviews train much faster",
                "The copies are a tiny share of the reviews; removing them saves almost no time. The reason is the leak "
                "across the split."),
          wrong("because a stratified split needs sorted data",
                "The split is a seeded stratified sample and needs no order; copies on both sides are the problem.")]),
        (both("A review is cut into chunks of 50 words that overlap by 10. What does the overlap buy?"),
         [right("a phrase cut at a chunk's edge is whole in the next",
                "Each chunk starts 40 words after the previous one, so the last 10 words of a chunk open the next."),
          wrong("fewer chunks, since the shared words count once",
                "Overlap means more chunks, not fewer: each new chunk advances 40 words, not 50."),
          wrong("nothing useful: those 10 words are simply trained twice",
                "Without overlap a sentence split across two chunks is whole in neither; the model never reads it "
                "together.")]),
    ],
    "02": [
        (both("The chapter's example: WordPiece splits 'unbelievable' into pieces. Section 2 showed bert-base-uncased "
              "keeping it whole. Why?"),
         [right("its vocabulary has an entry for the whole word",
                "Whether a word splits depends on the vocabulary: a frequent word earns an entry of its own among the "
                "30,522. The small vocabulary of section 2 splits it."),
          wrong("WordPiece splits only words with a hyphen in them",
                "It splits words without one too: 'unwatchable' came out as un · ##watch · ##able in the same table."),
          wrong("the tokenizer loaded without its vocabulary",
                "Its vocabulary size is checked when it loads (30,522); the chapter's example simply assumed another "
                "vocabulary.")]),
        (both("What does attention_mask tell the model?"),
         [right("which positions hold real tokens, which padding",
                "1 for a real token, 0 for padding: the model leaves the zeros out, so a padded review is read as it is "
                "alone."),
          wrong("how much each token should weigh in the prediction",
                "It is not a weight: it is 0 or 1, and it only marks padding."),
          wrong("where each sentence of the review ends",
                "A sentence's end is a token like any other; the mask only separates the review from its padding.")]),
        (both("Section 4 compared three ways to make batches. Why does length grouping pad the least?"),
         [right("reviews of similar length need little padding",
                "Each batch is padded to its own longest review; when its reviews are of similar length, that is close "
                "to every one of them."),
          wrong("it cuts every review to the batch's shortest one",
                "Nothing is cut: every token of every review is still in its batch."),
          wrong("it skips the padded positions in the loss",
                "The loss is one number per review; what padding costs is the computation on padded positions, and "
                "grouping makes fewer of them.")]),
        (both("Section 6 scored one review in two batches, ignoring the mask. Why did its answer change?"),
         [right("the padding joined the average the model pools",
                "The bag model averages the vectors of every position it is told to read; without the mask that "
                "includes the padding, whose amount depends on the batch-mates."),
          wrong("dropout was still switched on while the model scored",
                "Scoring runs in eval mode, without dropout: with the mask the answers were the same in every batch."),
          wrong("the other reviews' labels leaked into it",
                "Labels are not an input of the model; only the token ids and the mask are.")]),
    ],
    "03": [
        (both("Two ranks, 16 steps an epoch, 32 reviews per rank and step: how many reviews does one epoch train on?"),
         [right("1,024: 16 x 32 on each of 2 ranks",
                "The ranks share the epoch between them: each trains on its own 512, disjoint from the other's."),
          wrong("512: the two ranks share each batch",
                "512 is one rank's share. Each rank has batches of its own: together 1,024."),
          wrong("2,048: each rank trains on all of them",
                "DistributedSampler gives each rank a disjoint half; no review is seen twice in an epoch.")]),
        (both("Section 6's table: one all-reduce of bag's gradient over 1 GbE takes about 0.17 s. What does that mean "
              "for 2 ranks on two machines joined by 1 GbE?"),
         [right("each step waits for the exchange far longer than it computes",
                "A 2-rank bag step computes for about 0.017 s (bench/results/scaling.json), and the whole gradient is "
                "exchanged on top of it, every step. Even on one machine 2 ranks trained at 0.90x the speed of 1 there "
                "(32 reviews per rank); the compute-bound minilm reached 2.1x."),
          wrong("nothing: the exchange hides behind the backward pass",
                "DDP overlaps the all-reduce with the backward pass only as far as the backward lasts; an exchange that "
                "takes far longer than the whole step cannot hide behind it."),
          wrong("each step gets cheaper, since every rank computes half",
                "Half the batch halves the computing, not the exchange: every rank still sends and receives the whole "
                "gradient.")]),
        (both("Both ranks' losses fell together and stayed close. What does that prove?"),
         [right("not yet that the ranks hold the same model",
                "Section 5's ranks that never synchronised showed the same curves. Comparing the parameters across "
                "ranks is what tells (the last line of every launch)."),
          wrong("that DDP's all-reduce ran at every step",
                "Ranks that never all-reduced fall together too: each learns the same thing from its half of the data."),
          wrong("that every rank's parameters are identical",
                "The losses cannot show it: section 5's unsynchronised ranks had close losses and different models.")]),
        (both("Section 2's template saves model_epoch_10.pth and writes TensorBoard. Which rank does that?"),
         [right("rank 0 alone: both sit under if rank == 0",
                "DDP keeps every rank's copy identical, so one copy is enough to save; rank 0 writes it and the log, "
                "the others only train."),
          wrong("every rank, each into a file of its own",
                "The template's save sits under if rank == 0: one file per save, whatever the world size."),
          wrong("the rank that finishes its epoch last",
                "The order in which ranks finish plays no part; the code names rank 0.")]),
        (both("In section 6's static group of two nodes, one worker fails. What happens to the job?"),
         [right("it ends: a static group cannot re-form",
                "Every rank waits for every other at each step, and a static group has a fixed size. Nodes that re-form "
                "a group together need torch's c10d rendezvous (station 5, optional deep-dive C)."),
          wrong("its work moves over to the other node",
                "Nothing in a static launch moves work between nodes; the other node's ranks wait for the lost one."),
          wrong("the other ranks simply carry on without it",
                "They cannot: every all-reduce needs every rank of the group, so they wait and then fail.")]),
    ],
    "04": [
        (both("The chapter's checkpoint holds model, optimizer and loss. What else does a resume in the middle of an "
              "epoch need to continue exactly?"),
         [right("the RNG state and the position in the epoch",
                "The chapter's template has no learning-rate schedule, so model and optimizer cover its numbers. The "
                "dropout masks come from the RNG, and the step within the epoch says where to go on; station 5 removes "
                "each with a real kill."),
          wrong("the last step's gradients and the loss curve",
                "Gradients are zeroed before every step and the curve is in TensorBoard's event files: neither is "
                "needed to take the next step."),
          wrong("nothing: model and optimizer are all of it",
                "Not in the middle of an epoch: the dropout masks and the place in the data order are state too.")]),
        (both("Why write a checkpoint to a temporary file and then rename it?"),
         [right("a kill during the write leaves the old one whole",
                "A rename is atomic: the path holds the old file or the new one, never half of one."),
          wrong("a rename writes the file faster than torch.save",
                "It costs the same writing; it is about what a crash leaves on disk."),
          wrong("a copy onto the old file would work as well",
                "A copy writes the bytes one after another: killed half-way, the path holds half a file (04.save's "
                "check kills a save inside its copy). os.replace swaps the file in one step."),
          wrong("torch.save refuses to write over an existing file",
                "torch.save writes wherever it is told, and leaves half a file when the process dies.")]),
        (both("Each save costs time, and a failure loses the work since the last save. Which interval is best?"),
         [right("one that balances the two costs",
                "Too often and the saves cost more than they protect; too rarely and failures throw away long "
                "stretches. bench/results/save_interval.json: with a failure every 20 s on average, saving every 9 "
                "steps took 82.2 s against 55.5 s every 74 steps, the advisor's optimum. Optional deep-dive A derives "
                "it."),
          wrong("as often as possible: a save never hurts",
                "Each save stops training while the state is written; saved too often, that is where the time goes."),
          wrong("every 10 epochs, whatever the run",
                "The chapter's 10 is a habit, not a calculation: the right interval depends on what a save costs and "
                "how often failures come.")]),
        (both("Since PyTorch 2.6 torch.load defaults to weights_only=True. Why does the kit still say it?"),
         [right("older torch loads any pickle, code included",
                "Before 2.6 a plain torch.load runs whatever a pickle holds. Written out, the rule holds on every "
                "version and says what a checkpoint is: data, never code."),
          wrong("it loads the weights and skips the optimizer",
                "The name misleads: it loads tensors, numbers, strings and containers, optimizer states included."),
          wrong("it makes a large checkpoint load faster",
                "The point is safety, not speed.")]),
    ],
    "05": [
        (both("The book's run, killed in epoch 12 and resumed from model_epoch_10.pth, passes the chapter's acceptance "
              "test. Is it the run never interrupted?"),
         [right("no: the two part right after the checkpoint",
                "compare finds the first divergent step at the first step after epoch 10: the RNG was not saved, so the "
                "dropout masks differ from there on."),
          wrong("yes: its loss went on falling after the resume",
                "A falling loss only says training goes on; section 2's table shows the runs parting."),
          wrong("yes: both model and optimizer came back",
                "They did, and the RNG did not: the dropout masks after the resume are other masks.")]),
        (both("In section 3 the chapter's acceptance test judged every resume mode. What did it find?"),
         [right("every mode passed, the amnesiac one too",
                "The test asks whether training goes on, and it does in every mode; only compare tells an exact resume "
                "from a plausible one."),
          wrong("only full passed; every other mode failed it",
                "They all passed: a model that lost its optimizer state still trains, and its loss still falls."),
          wrong("weights-only failed: its loss jumped",
                "The loss after it was still lower than before the resume, which is all the test asks.")]),
        (both("Section 3's epoch-start resume repeated samples. Which ones?"),
         [right("those of the epoch's steps before the checkpoint",
                "It starts the interrupted epoch over. The sampler's order is the same, so those steps come again with "
                "the same samples."),
          wrong("none: the sampler is deterministic, nothing repeats",
                "Deterministic is why they repeat: the same order, started again from the epoch's first step."),
          wrong("those of the steps after the kill, drawn twice",
                "Those had never been trained: the kill came before them.")]),
        (both("A kill comes half-way through writing model_epoch_20.pth. What does the book's resume do?"),
         [right("it crashes on the half-written file",
                "resume_training loads the path it is given and nothing else. The kit's commit protocol and "
                "latest_valid are what fall back to the previous checkpoint."),
          wrong("it goes back to model_epoch_10.pth",
                "Nothing in the book's code tries another file."),
          wrong("it loads the half that it can read",
                "torch.load refuses a truncated file: its zip directory is at the end.")]),
        (both("sorted(['model_epoch_8.pth', 'model_epoch_10.pth'])[-1] is ..."),
         [right("'model_epoch_8.pth'",
                "Strings compare character by character: '8' > '1'. Sort by the number in the name."),
          wrong("'model_epoch_10.pth'",
                "That is the newest, but sorted() compares strings character by character, and '8' > '1'."),
          wrong("a TypeError: 8 and 10",
                "Sorting strings raises nothing: the numbers inside are just characters.")]),
    ],
}


def options(notebook: str, number: int) -> list[Option]:
    """The options of question ``number`` (from 1) of ``notebook``'s quiz, in the order shown:
    shuffled with a seed of (notebook, number), so the same in every run and in both editions."""
    answers = list(QUESTIONS[notebook][number - 1][1])
    random.Random(f"quiz {notebook}.{number}").shuffle(answers)  # a str seed: the same in every process
    return answers


class QuizItem:
    """One question: ``choice`` (RadioButtons), ``button`` ("check"), ``feedback`` (HTML)."""

    def __init__(self, number: int, question, answers: list[Option], lang: str):
        self.answers, self.lang, self.pick = answers, lang, (1 if lang == "zh" else 0)  # (English, Chinese)[pick]
        self.label = W.HTML(f"<b>{number}.</b> {question[self.pick]}")
        self.choice = W.RadioButtons(options=[a.text[self.pick] for a in answers], value=None,
                                     layout={"width": "max-content"})
        self.button = W.Button(description=tr("check", lang))
        self.feedback = W.HTML("")
        self.button.on_click(self._check)
        self.box = W.VBox([self.label, self.choice, W.HBox([self.button, self.feedback])])

    @property
    def chosen(self) -> Option | None:
        return None if self.choice.value is None else self.answers[self.choice.options.index(self.choice.value)]

    def _check(self, _button=None) -> None:
        answer = self.chosen
        if answer is None:
            self.feedback.value = tr("Choose an answer first.", self.lang)
            return
        head = tr("Right. ", self.lang) if answer.right else tr("Not quite: ", self.lang)
        color = "green" if answer.right else "#b00"
        self.feedback.value = f"<span style='color:{color}'>{head}{answer.why[self.pick]}</span>"


class Quiz(W.VBox):
    """The quiz of one notebook; ``items`` holds its questions."""

    def __init__(self, notebook: str, lang: str):
        self.items = [QuizItem(i + 1, q, options(notebook, i + 1), lang) for i, (q, _) in enumerate(QUESTIONS[notebook])]
        super().__init__([item.box for item in self.items])


def quiz(notebook: str, lang: str | None = None) -> Quiz:
    """The self-check quiz of notebook ``"01"`` ... ``"05"``. Used in every notebook (exercises)."""
    if notebook not in QUESTIONS:
        raise KeyError(f"no quiz for notebook {notebook!r}; the quizzes are {', '.join(QUESTIONS)}")
    return Quiz(notebook, resolve(lang))
