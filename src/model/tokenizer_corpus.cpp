// The text the synthetic tokenizer's merges are learned from: plain English prose
// written for polyinfer, so the merges look like those of a real tokenizer (common
// words and word pieces with their leading space).
#include "polyinfer/synthetic_tokenizer.hpp"

namespace polyinfer {

const std::string& tokenizer_corpus() {
  static const std::string text =
      R"(The river town woke early in the summer. Before the sun was over the hills, the
bakers had lit their ovens and the fishermen were already out on the water, pulling
their nets through the cold morning mist. Children ran along the stone streets with
bread under their arms, and the old men sat on the benches by the harbour, talking
about the weather, the price of fish, and the news that had come from the city.

There was always news from the city. Some of it was true and some of it was only
rumour, but the people of the town listened to all of it with the same patient
interest. They had learned that the world beyond the hills changed quickly, while
their own lives changed slowly, season by season, like the river itself. The river
rose in the spring when the snow melted in the mountains, and it fell again in the
late summer, when the fields were dry and the farmers watched the sky for rain.

In the middle of the town stood the library, a small building of grey stone with a
green door and tall windows. The librarian was a quiet woman who had read every book
on every shelf, or so the children believed. She kept a long table near the window
where anyone could sit and read, and in the afternoons the table was full of students,
travellers, and people who simply wanted a warm place to think. She liked to say that
a good book is a conversation with someone you will never meet, and that reading is
the only kind of travel that costs nothing and takes you anywhere.

One winter a young engineer arrived in the town. She had come to study the old water
mill at the edge of the river, which had not turned for many years. The wheel was
broken, the gears were covered in rust, and the roof had fallen in during a storm.
Most people thought the mill could never work again, but the engineer was not most
people. She measured every part of the machine, drew careful plans in her notebook,
and asked the blacksmith to help her make new gears from the old iron.

The work took the whole winter and most of the spring. Every morning she walked down
to the mill with her tools, and every evening she walked back to the inn, tired and
cold but happy. The people of the town began to visit her, first out of curiosity and
then to help. The carpenter built a new roof. The blacksmith forged the gears. The
children carried water and nails and sandwiches, and the old men from the harbour came
to watch and to give advice that nobody needed but everybody enjoyed.

When the wheel finally turned again, on a bright morning in early summer, the whole
town came down to the river to see it. The water poured over the paddles, the gears
began to move, and the great stones inside the mill started to grind the grain. The
engineer stood by the door and smiled, and the librarian wrote the date in a small
book that she kept for the history of the town. It was the third of June, and the
weather was warm and clear.

Years later, people still told the story of the winter when the mill was repaired.
They told it to their children and to the travellers who stopped at the inn, and each
time the story grew a little longer and a little better. The engineer had long since
moved on to other towns and other machines, but the mill kept turning, day after day,
and the bread from its flour was the best in the whole valley. In the evenings, when
the light was soft and the river was calm, you could still hear the slow and steady
sound of the wheel, turning and turning, as if it were counting the days of the town.

Numbers matter as well as words: the mill ground 120 sacks of grain in its first
week, 250 in its first month, and more than 3000 by the end of the year. The town
paid 45 coins for the iron, 18 for the timber, and nothing at all for the work.
)";
  return text;
}

}  // namespace polyinfer
