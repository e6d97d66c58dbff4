"""Hand-written demo material, part 3: writing and reasoning prompts (written by the preflab project).

For writing prompts ``core`` is the piece itself and ``gist`` a one-line description of it; a wrong
writing answer breaks the constraint the prompt sets (form, length, meaning).
"""

from __future__ import annotations

from content_schema import Entry

WRITING: list[Entry] = [
    Entry(
        "writing", "Write a haiku about autumn rain.",
        core="Cold rain on the roof\nmaple leaves drift down the street\nthe gutters run red",
        gist="a 5-7-5 haiku built around one autumn image.",
        points=("Form: Three lines of 5, 7 and 5 syllables.",
                "Season word: Maple leaves mark the season, as in traditional haiku.",
                "Image: It ends on a concrete picture instead of a statement."),
        wrong="Autumn rain is falling softly on the quiet little town\nleaves\n"
              "the sky is grey and all the streets are wet and cold tonight",
        flaw="Ignores the 5-7-5 form: two overlong lines around a one-word line.",
    ),
    Entry(
        "writing", "Write a two-sentence horror story.",
        core="Every night I lock the front door, check it twice and go to bed. Tonight, for the first "
             "time, I heard someone on the inside check it a third time.",
        gist="two sentences, with the twist saved for the very end.",
        points=("Length: Exactly two sentences, as asked.",
                "Set-up: The first sentence is an ordinary routine.",
                "Twist: The last words turn the routine into a threat."),
    ),
    Entry(
        "writing", "Write a polite email declining a meeting invitation.",
        core="Subject: Re: Project sync on Thursday\n\nHi Sam,\n\nThank you for the invitation. "
             "Unfortunately, I have a prior commitment on Thursday afternoon and will not be able to "
             "attend. I am happy to send my updates by email beforehand; could you share the notes "
             "afterwards?\n\nBest regards,\nAlex",
        gist="a short, friendly refusal that offers another way to contribute.",
        points=("Thanks first: Opening with thanks keeps the tone warm.",
                "Brief reason: One clause is enough; there is no need to over-explain.",
                "Next step: Offering written updates shows you still care about the work."),
    ),
    Entry(
        "writing", "Write a product description for a reusable water bottle in under 50 words.",
        core="Meet the TrailFlask: a 750 ml stainless-steel bottle that keeps drinks cold for 24 hours and "
             "hot for 12. Its leak-proof lid clips to any bag, and it fits standard cup holders. Durable, "
             "dishwasher-safe and plastic-free, it is the last bottle you will need.",
        gist="a 44-word description that leads with the benefits.",
        points=("Word limit: 44 words, under the 50 asked for.",
                "Benefits: Temperature, leak-proofing and fit come before materials.",
                "Close: The last line gives a reason to buy."),
        wrong="Introducing the TrailFlask, the ultimate hydration companion for every adventure you can "
              "imagine. Crafted from premium stainless steel, this 750 ml bottle keeps your drinks ice cold "
              "for a full 24 hours or piping hot for 12 hours. The innovative leak-proof lid clips easily "
              "onto any backpack, and the slim design slides into standard cup holders. It is durable, "
              "dishwasher-safe, completely plastic-free and built to last for years.",
        flaw="Runs to 68 words, over the 50-word limit.",
    ),
    Entry(
        "writing", "Write a limerick about a cat who loves coffee.",
        core="A tabby who lived on the quay\npreferred a dark roast to her tea.\nShe'd lap up a cup,\n"
             "then bounce till sun-up,\nand snooze until quarter past three.",
        gist="a five-line limerick with an AABBA rhyme.",
        points=("Rhyme: quay, tea and three rhyme; cup and sun-up rhyme.",
                "Rhythm: The long lines have three beats and the short lines two.",
                "Punchline: The last line pays off the caffeine."),
        wrong="A cat who liked coffee a lot\ndrank it every morning from the pot.\nShe was very awake\n"
              "all day long\nand then at night she slept on the mat.",
        flaw="Breaks the AABBA rhyme: the short lines and the last line do not rhyme.",
    ),
    Entry(
        "writing", "Write a short message to encourage a friend who starts a new job tomorrow.",
        core="Good luck tomorrow! They hired you because they saw what I see: someone who learns fast and "
             "makes people feel welcome. Ask lots of questions, be kind to yourself in the first weeks, "
             "and tell me everything on Friday.",
        gist="a warm, specific note with one piece of practical advice.",
        points=("Specific praise: It names real strengths instead of a generic compliment.",
                "Advice: Asking questions and patience with yourself are useful in any first week.",
                "Connection: Ending with a plan to talk keeps the friendship in view."),
    ),
    Entry(
        "writing", "Rewrite in plain English: 'Pursuant to our previous correspondence, we hereby "
                   "acknowledge receipt of your remittance.'",
        core="As we discussed, we have received your payment.",
        gist="the same meaning in eight plain words.",
        points=("Pursuant to our previous correspondence: becomes as we discussed.",
                "Hereby acknowledge receipt of: becomes have received.",
                "Remittance: becomes payment."),
        wrong="We are writing to remind you that your payment is now due.",
        flaw="Changes the meaning: the original confirms a payment was received, not that one is due.",
    ),
    Entry(
        "writing", "Write an opening line for a fantasy novel.",
        core="The last dragon in Aldmere did not die in battle; it died of boredom, and the kingdom has "
             "never forgiven itself.",
        gist="one line that sets up a world, a mystery and a tone.",
        points=("Subverts: It sets up a heroic death and then denies it.",
                "Question: Why was the dragon bored? The reader wants to know.",
                "Voice: The dry humour tells the reader what kind of book this is."),
    ),
]

REASONING: list[Entry] = [
    Entry(
        "reasoning", "A bat and a ball cost $1.10 in total. The bat costs $1.00 more than the ball. "
                     "How much does the ball cost?",
        core="The ball costs 5 cents: if the ball costs x, the bat costs x + 1.00, so 2x + 1.00 = 1.10 "
             "and x = 0.05.",
        points=("Check: 0.05 + 1.05 = 1.10, and 1.05 is exactly 1.00 more than 0.05.",
                "The trap: 10 cents feels right, but then the bat costs 1.10 and the total is 1.20.",
                "Method: Write the two conditions as equations before answering."),
        wrong="The ball costs 10 cents, since $1.10 minus $1.00 is 10 cents.",
        flaw="With a 10-cent ball the bat costs $1.10 and the total is $1.20; the answer is 5 cents.",
    ),
    Entry(
        "reasoning", "If all bloops are razzies and all razzies are lazzies, are all bloops definitely "
                     "lazzies?",
        core="Yes. Every bloop is a razzie and every razzie is a lazzie, so every bloop is a lazzie.",
        points=("Form: This is a valid syllogism: A is in B and B is in C, so A is in C.",
                "Made-up words: The nonsense names do not matter; only the structure does.",
                "Converse: It does not follow that all lazzies are bloops."),
    ),
    Entry(
        "reasoning", "A farmer has 17 sheep. All but 9 run away. How many are left?",
        core="9 sheep are left: all but 9 means that 9 did not run away.",
        points=("Reading: All but 9 names the ones that stay, not the ones that leave.",
                "The trap: Subtracting 17 − 9 = 8 answers a different question.",
                "Check: 8 ran away and 9 stayed, and 8 + 9 = 17."),
        wrong="8 sheep are left, because 17 − 9 = 8.",
        flaw="All but 9 run away means 9 remain; the answer is 9.",
    ),
    Entry(
        "reasoning", "If 5 machines take 5 minutes to make 5 widgets, how long do 100 machines take to "
                     "make 100 widgets?",
        core="5 minutes. Each machine makes one widget in 5 minutes, so 100 machines make 100 widgets in "
             "the same 5 minutes.",
        points=("Rate: One machine makes one widget every 5 minutes.",
                "Parallel work: More machines make more widgets at once, not each one faster.",
                "The trap: Scaling every number by 20 suggests 100 minutes."),
        wrong="100 minutes, because every number grows by the same factor.",
        flaw="The machines work in parallel, so it still takes 5 minutes.",
    ),
    Entry(
        "reasoning", "Which is larger: 0.999... (with the 9s repeating forever) or 1?",
        core="Neither: they are equal. One third is 0.333..., and three times one third is both 0.999... "
             "and 1.",
        points=("Algebra: If x = 0.999..., then 10x − x = 9.999... − 0.999... = 9, so x = 1.",
                "No gap: There is no number between 0.999... and 1, so they cannot differ.",
                "Notation: The same number can have two decimal expansions."),
    ),
    Entry(
        "reasoning", "Tom is taller than Ann, and Ann is taller than Raj. Is Raj taller than Tom?",
        core="No. Tom is taller than Ann, who is taller than Raj, so Tom is taller than Raj.",
        points=("Transitivity: Taller than carries over: if A > B and B > C, then A > C.",
                "Order: From tallest to shortest: Tom, Ann, Raj.",
                "Certainty: The two facts settle the question; nothing is left to guess."),
    ),
    Entry(
        "reasoning", "A train leaves at 14:45 and the journey takes 2 hours 35 minutes. When does it "
                     "arrive?",
        core="It arrives at 17:20: 14:45 plus 2 hours is 16:45, and 35 more minutes is 17:20.",
        points=("Hours first: Adding the whole hours first keeps the sum simple.",
                "Minutes: 45 + 35 = 80 minutes, which is 1 hour 20 minutes.",
                "Check: From 14:45 to 17:20 is 2 hours 35 minutes."),
    ),
    Entry(
        "reasoning", "How many times does the digit 1 appear when you write the numbers from 1 to 20?",
        core="12 times: once in 1, ten times as the tens digit of 10 to 19, and once more as the units "
             "digit of 11.",
        points=("Tens digits: 10, 11, ..., 19 give ten 1s.",
                "Units digits: 1 and 11 give two more 1s.",
                "Double count: 11 has two 1s, which is easy to miss."),
        wrong="11 times: once in 1 and once in each of 10 to 19.",
        flaw="Counts 11 only once; it has two 1s, so the answer is 12.",
    ),
]
