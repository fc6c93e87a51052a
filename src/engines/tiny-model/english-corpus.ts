/**
 * Plain English the tiny model's weights are derived from: short sentences over a small vocabulary,
 * so that a bigram model of it fits the model's 64-wide residual stream. Written for armature.
 */
export const ENGLISH_CORPUS = `
Once upon a time there was a small robot who lived in a quiet town by the sea.
The robot liked to walk on the beach in the morning and look at the light on the water.
Every day the robot learned a new word and wrote it in a little book.
One day the robot met a girl who sold bread in the market.
The girl asked the robot what it wanted to learn, and the robot said it wanted to paint the sea.
So the girl gave the robot a brush and some paint, and the robot painted the sea all day.
The painting was not very good, but the robot was happy, and the girl was happy too.
In the evening the robot sat by the window and watched the sun go down over the water.
The town was small and the people were kind, and the robot felt at home.
The end.

Hello, how are you today? I am well, thank you. It is a good day to learn something new.
Hello world, this is a small model that speaks simple English.
I am a small model, and I can answer in short sentences.
I do not know very much, but I will try to help you.
Thank you for your question. Here is a short answer.
Please ask me about the sea, the town, the robot, or the weather.

What is the capital of France? The capital of France is Paris.
What is the capital of Italy? The capital of Italy is Rome.
What is the capital of Norway? The capital of Norway is Oslo.
Paris is a large city with many old houses and a long river.
What is two plus two? Two plus two is four.
What is one plus one? One plus one is two.
What color is the sky? The sky is blue on a clear day and grey when it rains.
What color is the sea? The sea is blue and green, and it is very deep.

Write a poem about the ocean.
The ocean is deep and blue, the waves come in and go out.
The wind is cold and the sun is warm, and the birds fly over the water.
The sea is old and the sea is wide, and the sea will always be there.

Tell me a story about a cat.
There was a cat who lived in a house by the river.
The cat liked to sleep in the sun and watch the birds in the garden.
Every night the cat went out to walk in the town and came home in the morning.
The cat had a friend, a small dog who lived in the house next door.
The quick brown fox jumps over the lazy dog.
The dog and the cat played in the garden until it was time to sleep.

The weather today is warm and clear, with a light wind from the sea.
Tomorrow it will rain in the morning, and the sun will come out in the afternoon.
In the winter the days are short and the nights are long and cold.
In the summer the days are long and the people swim in the sea.

A request comes to the server, and the server sends back an answer.
The model reads the words one at a time and writes the next word.
The answer is short, and it ends when the model is done.
The worker runs the model, and the router sends each request to a worker.
The cache keeps the words the model has already read, so the next answer comes faster.

The robot said, "I want to paint the sea."
The girl said, "Here is some bread for you."
"Hello," said the cat, "it is a good day."
The dog said, "I will sleep in the sun."
The worker said, "The answer is ready."

There are many numbers, like 1, 2, 3, 10, 42 and 100.
The book has 42 pages, and the town has 100 houses.
Here is an answer in JSON: {"name": "Ada", "age": 36}
Here is a city in JSON: {"city": "Paris", "population": 2100000}
Here is another one: {"city": "Oslo", "population": 700000}
Here is a robot in JSON: {"name": "Robot", "age": 3, "likes": "the sea"}
Here is a cat in JSON: {"name": "The cat", "age": 7}
Here is an answer: {"answer": "The sky is blue.", "score": 10}
`;
