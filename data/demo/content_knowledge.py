"""Hand-written demo material, part 1: facts and how-to prompts (written by the preflab project).

Each entry holds the prompt, the correct core answer, three "Title: text" supporting points, optional code,
and — where the sloppy model gets it wrong — a wrong core and a note saying what is wrong.
"""

from __future__ import annotations

from content_schema import Entry

FACTS: list[Entry] = [
    Entry(
        "facts", "What is the capital of Australia?",
        core="The capital of Australia is Canberra.",
        points=("Not Sydney: Sydney is the largest city, but it is not the capital.",
                "Planned city: Canberra was chosen as a compromise between Sydney and Melbourne and built "
                "as the capital.",
                "Parliament: Parliament has sat in Canberra since 1927."),
        wrong="The capital of Australia is Sydney, its largest and best-known city.",
        flaw="Names Sydney; the capital is Canberra.",
    ),
    Entry(
        "facts", "At what temperature does water boil at sea level?",
        core="At standard sea-level pressure, water boils at 100 °C (212 °F).",
        points=("Pressure matters: At lower pressure, such as high in the mountains, water boils at a lower "
                "temperature.",
                "Standard pressure: Standard atmospheric pressure is 101.325 kPa.",
                "Impurities: Dissolved salt raises the boiling point slightly."),
    ),
    Entry(
        "facts", "How many bones are in the adult human body?",
        core="An adult human skeleton typically has 206 bones.",
        points=("Babies have more: Newborns have around 270 to 300 bony parts, many of which fuse as they grow.",
                "Longest: The femur, the thigh bone, is the longest and strongest bone.",
                "Smallest: The stapes in the middle ear is the smallest bone."),
    ),
    Entry(
        "facts", "Who wrote the novel Pride and Prejudice?",
        core="Jane Austen wrote Pride and Prejudice; it was first published in 1813.",
        points=("Author: Jane Austen (1775–1817) was an English novelist.",
                "Publication: It appeared anonymously, credited to the author of Sense and Sensibility.",
                "Other works: Her other novels include Emma and Persuasion."),
        wrong="Pride and Prejudice was written by Charlotte Brontë and published in 1847.",
        flaw="Names Charlotte Brontë and 1847; it is Jane Austen, 1813.",
    ),
    Entry(
        "facts", "What is the chemical symbol for gold?",
        core="The chemical symbol for gold is Au, from the Latin word aurum.",
        points=("Atomic number: Gold has atomic number 79.",
                "Properties: It is dense and soft and does not tarnish in air.",
                "Not Ag: Ag is the symbol for silver."),
    ),
    Entry(
        "facts", "What is the largest planet in our solar system?",
        core="Jupiter is the largest planet in the solar system.",
        points=("Size: Its diameter is about 11 times that of Earth.",
                "Gas giant: It is made mostly of hydrogen and helium.",
                "Great Red Spot: It has a storm larger than Earth that has lasted for centuries."),
        wrong="Saturn is the largest planet in the solar system.",
        flaw="Names Saturn; Jupiter is the largest.",
    ),
    Entry(
        "facts", "What does DNA stand for?",
        core="DNA stands for deoxyribonucleic acid.",
        points=("Role: It carries the genetic instructions of living things.",
                "Structure: It is a double helix of two strands.",
                "Bases: Its four bases are adenine, thymine, guanine and cytosine."),
    ),
    Entry(
        "facts", "How long does light from the Sun take to reach Earth?",
        core="Sunlight takes about 8 minutes and 20 seconds (roughly 499 seconds) to reach Earth.",
        points=("Distance: The average distance from Earth to the Sun is about 150 million kilometres.",
                "Speed: Light travels at about 299,792 kilometres per second.",
                "It varies: The time changes slightly over the year because Earth's orbit is an ellipse."),
    ),
]

HOW_TO: list[Entry] = [
    Entry(
        "how-to", "How do I make text bold in HTML?",
        core="Wrap the text in a strong element, or in a b element when you only want the bold look, "
             "as in the example below.",
        points=("Meaning: strong marks text as important, which screen readers can convey.",
                "CSS instead: For purely visual bold, font-weight: bold in a stylesheet keeps style out "
                "of the markup.",
                "Close the tag: Close the element after the text, or the rest of the page turns bold."),
        code='<p>This is <strong>important</strong> and this is <b>just bold</b>.</p>',
        lang="html",
    ),
    Entry(
        "how-to", "How do I boil an egg so the yolk is still runny?",
        core="Lower the egg into boiling water, cook it for about 6 minutes, then cool it in cold water "
             "for a minute before peeling.",
        points=("Start hot: Use eggs from the fridge and water at a full rolling boil.",
                "Timing: 6 minutes gives a set white and a runny yolk; 7 minutes gives a jammy yolk.",
                "Stop the cooking: A cold-water bath keeps the yolk from setting further."),
    ),
    Entry(
        "how-to", "How do I undo the last git commit but keep my changes?",
        core="Run git reset --soft HEAD~1: the commit is removed and its changes stay staged.",
        points=("Soft reset: --soft moves the branch back one commit but keeps your files and the index.",
                "Already pushed: If others have the commit, prefer git revert so shared history is "
                "not rewritten.",
                "Unstage too: --mixed, the default, keeps the changes but unstages them."),
        code="git reset --soft HEAD~1\ngit status   # your changes are still staged",
        lang="bash",
        wrong="Run git reset --hard HEAD~1 to undo the commit while keeping your changes.",
        flaw="--hard throws the changes away; --soft (or --mixed) keeps them.",
    ),
    Entry(
        "how-to", "How can I fall asleep faster?",
        core="Keep a regular sleep schedule, avoid screens and caffeine before bed, and keep your bedroom "
             "dark, cool and quiet.",
        points=("Routine: Going to bed and waking at the same times trains your body clock.",
                "Caffeine: Avoid it for about six hours before bed.",
                "Wind down: A calm routine such as reading helps; if you cannot sleep after 20 minutes, "
                "get up for a while."),
    ),
    Entry(
        "how-to", "How do I convert Celsius to Fahrenheit?",
        core="Multiply the Celsius temperature by 9/5 and add 32: F = C × 9/5 + 32.",
        points=("Example: 25 °C × 9/5 + 32 = 77 °F.",
                "Quick estimate: Doubling and adding 30 gives a rough answer.",
                "The other way: C = (F − 32) × 5/9."),
        wrong="Add 32 and then multiply by 9/5: F = (C + 32) × 9/5.",
        flaw="Adds 32 before multiplying; 25 °C would give 102.6 °F instead of 77 °F.",
    ),
    Entry(
        "how-to", "How do I create a Python virtual environment?",
        core="Run python -m venv .venv, then activate it with source .venv/bin/activate "
             "(on Windows: .venv\\Scripts\\activate).",
        points=("Isolation: Packages install into .venv instead of the system Python.",
                "Leaving: Run deactivate to leave the environment.",
                "Version control: Add .venv to .gitignore so it is not committed."),
        code="python -m venv .venv\nsource .venv/bin/activate\npip install requests",
        lang="bash",
    ),
    Entry(
        "how-to", "How do I remove a red wine stain from a cotton shirt?",
        core="Blot the stain without rubbing, rinse it from the back with cold water, work in liquid "
             "detergent, then wash in cold water and air-dry.",
        points=("Act fast: Fresh stains come out much more easily.",
                "Cold water: Hot water can set the stain.",
                "Check before drying: The heat of a dryer can make what is left permanent."),
    ),
    Entry(
        "how-to", "How do I change a flat tyre on a car?",
        core="Park safely, loosen the wheel nuts, jack the car up, swap the wheel for the spare, "
             "hand-tighten the nuts, lower the car, then tighten the nuts fully in a star pattern.",
        points=("Safety: Use the hazard lights and parking brake, on flat ground away from traffic.",
                "Loosen first: Loosen the nuts while the wheel is on the ground so it cannot spin.",
                "Afterwards: Check the spare's pressure and get the flat repaired soon."),
    ),
]
