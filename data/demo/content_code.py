"""Hand-written demo material, part 2: coding prompts (written by the preflab project).

Where comet-sloppy answers with buggy code, ``wrong_code`` holds it and ``flaw`` names the bug.
"""

from __future__ import annotations

from content_schema import Entry

CODING: list[Entry] = [
    Entry(
        "coding", "Write a Python function that reverses a string.",
        core="Slicing with a step of -1 returns the characters in reverse order.",
        points=("Slicing: s[::-1] walks the string from the end to the start.",
                "Immutable: Strings cannot change in place, so a new string is returned.",
                "Unicode: This reverses code points, so some combined characters such as flag emoji "
                "come apart."),
        code='def reverse_string(s: str) -> str:\n    return s[::-1]\n\n\nprint(reverse_string("hello"))  # olleh',
        lang="python",
    ),
    Entry(
        "coding", "Write a Python function that checks whether a number is prime.",
        core="Trial division up to the square root of n is enough, because any factor above the root "
             "pairs with one below it.",
        points=("Small numbers: 0, 1 and negative numbers are not prime, so they are rejected first.",
                "Square-root bound: Checking while i * i <= n keeps the loop short.",
                "Many numbers: To test a whole range, a sieve of Eratosthenes is faster."),
        code="def is_prime(n: int) -> bool:\n"
             "    if n < 2:\n"
             "        return False\n"
             "    i = 2\n"
             "    while i * i <= n:\n"
             "        if n % i == 0:\n"
             "            return False\n"
             "        i += 1\n"
             "    return True",
        lang="python",
        wrong_code="def is_prime(n):\n"
                   "    for i in range(2, n):\n"
                   "        if n % i == 0:\n"
                   "            return False\n"
                   "    return True",
        flaw="Returns True for 0, 1 and negative numbers, which are not prime.",
    ),
    Entry(
        "coding", "Write a Python function that escapes HTML special characters in a string.",
        core="Use html.escape from the standard library; it replaces &, <, > and quotes with entities.",
        points=("Order matters: & must be replaced first, and html.escape does that for you.",
                "Quotes: quote=True also escapes quote characters, for text inside attributes.",
                "When: Escape untrusted text every time before putting it into an HTML page."),
        code="import html\n\n\n"
             "def escape_html(text: str) -> str:\n"
             "    return html.escape(text, quote=True)\n\n\n"
             "print(escape_html('<script>alert(\"hi\")</script>'))\n"
             "# &lt;script&gt;alert(&quot;hi&quot;)&lt;/script&gt;",
        lang="python",
        wrong_code="def escape_html(text):\n"
                   '    return text.replace("<", "&lt;").replace(">", "&gt;").replace("&", "&amp;")\n\n\n'
                   "print(escape_html('<b>hi</b>'))",
        flaw="Replaces & last, so the entities it has just written turn into &amp;lt; and &amp;gt;.",
    ),
    Entry(
        "coding", "Write a Python function that returns the n-th Fibonacci number.",
        core="An iterative loop computes it in linear time and never hits the recursion limit.",
        points=("Indexing: fibonacci(0) is 0 and fibonacci(1) is 1.",
                "Speed: The loop runs n times, while naive recursion takes exponential time.",
                "Big numbers: Python integers grow as needed, so large n works."),
        code="def fibonacci(n: int) -> int:\n"
             "    a, b = 0, 1\n"
             "    for _ in range(n):\n"
             "        a, b = b, a + b\n"
             "    return a",
        lang="python",
    ),
    Entry(
        "coding", "Write a SQL query that finds the five customers with the highest total order amount.",
        core="Group the orders by customer, sum the amounts, sort by the total in descending order and "
             "keep the first five rows.",
        points=("GROUP BY: It gives one row per customer.",
                "ORDER BY ... DESC: The largest totals come first.",
                "Ties: Customers tied for fifth place are cut arbitrarily; RANK() in a window function "
                "keeps them all."),
        code="SELECT customer_id, SUM(amount) AS total\n"
             "FROM orders\n"
             "GROUP BY customer_id\n"
             "ORDER BY total DESC\n"
             "LIMIT 5;",
        lang="sql",
        wrong_code="SELECT customer_id, SUM(amount) AS total\n"
                   "FROM orders\n"
                   "GROUP BY customer_id\n"
                   "ORDER BY total\n"
                   "LIMIT 5;",
        flaw="Sorts ascending, so it returns the five customers with the lowest totals.",
    ),
    Entry(
        "coding", "Write a Python function that removes duplicates from a list while keeping the original order.",
        core="dict.fromkeys keeps the first occurrence of each item, and dictionaries preserve insertion "
             "order.",
        points=("Order: Dictionaries keep insertion order since Python 3.7.",
                "Hashable items: The items must be hashable; for lists of lists, track a set of tuples.",
                "Speed: It runs in linear time."),
        code="def dedupe(items: list) -> list:\n"
             "    return list(dict.fromkeys(items))\n\n\n"
             "print(dedupe([3, 1, 3, 2, 1]))  # [3, 1, 2]",
        lang="python",
    ),
    Entry(
        "coding", "Write a JavaScript function that debounces another function.",
        core="Each call cancels the pending timer and starts a new one, so fn runs only once the calls "
             "have stopped for delayMs.",
        points=("Use case: Search boxes and window resizing, where events arrive in bursts.",
                "Context: fn.apply passes the caller's this and arguments through.",
                "Trailing edge: This version fires after the burst, not at its start."),
        code="function debounce(fn, delayMs) {\n"
             "  let timer = null;\n"
             "  return function (...args) {\n"
             "    clearTimeout(timer);\n"
             "    timer = setTimeout(() => fn.apply(this, args), delayMs);\n"
             "  };\n"
             "}",
        lang="javascript",
    ),
    Entry(
        "coding", "Write a Python function that counts how often each word appears in a text.",
        core="Lower-case the text, pull out the words with a regular expression and count them with "
             "collections.Counter.",
        points=("Normalising: Lower-casing makes The and the the same word.",
                "Punctuation: The pattern leaves out commas and full stops.",
                "Top words: Counter.most_common(10) gives the ten most frequent words."),
        code="import re\n"
             "from collections import Counter\n\n\n"
             "def word_counts(text: str) -> Counter:\n"
             "    return Counter(re.findall(r\"[a-z']+\", text.lower()))",
        lang="python",
        wrong_code="def word_counts(text):\n"
                   "    counts = {}\n"
                   "    for word in text.split():\n"
                   "        counts[word] += 1\n"
                   "    return counts",
        flaw="Raises KeyError on the first word, because counts[word] is never initialised.",
    ),
]
