"""preflab's Streamlit app (checkout entry point): ``streamlit run app.py`` with ``PREFLAB_DB`` set.

``preflab app --db URL`` is the usual way in; the pages live in ``voting/pages/`` and the navigation in
:mod:`voting.app`, which ships with the package.
"""

from voting.app import run

run()
