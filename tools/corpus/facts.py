# Small fact tables for the corpus (English and Vietnamese).

# (thing, colour, thing in Vietnamese, colour in Vietnamese)
COLOURS = [
    ("the sky", "blue", "bầu trời", "xanh dương"),
    ("grass", "green", "cỏ", "xanh lá"),
    ("a banana", "yellow", "quả chuối", "vàng"),
    ("snow", "white", "tuyết", "trắng"),
    ("coal", "black", "than", "đen"),
    ("blood", "red", "máu", "đỏ"),
    ("milk", "white", "sữa", "trắng"),
    ("a strawberry", "red", "quả dâu tây", "đỏ"),
    ("a carrot", "orange", "củ cà rốt", "cam"),
    ("the sun", "yellow", "mặt trời", "vàng"),
    ("a tomato", "red", "quả cà chua", "đỏ"),
    ("a leaf", "green", "chiếc lá", "xanh lá"),
    ("the sea", "blue", "biển", "xanh dương"),
    ("chocolate", "brown", "sô cô la", "nâu"),
    ("an orange", "orange", "quả cam", "cam"),
    ("a crow", "black", "con quạ", "đen"),
    ("a polar bear", "white", "gấu Bắc Cực", "trắng"),
    ("a frog", "green", "con ếch", "xanh lá"),
    ("a flamingo", "pink", "chim hồng hạc", "hồng"),
    ("an eggplant", "purple", "quả cà tím", "tím"),
    ("a cloud", "white", "đám mây", "trắng"),
    ("a fire truck", "red", "xe cứu hỏa", "đỏ"),
    ("an elephant", "grey", "con voi", "xám"),
    ("a lime", "green", "quả chanh", "xanh lá"),
]

# (colour a, colour b, mix)
MIXES = [("blue", "yellow", "green"), ("red", "yellow", "orange"), ("red", "blue", "purple"),
         ("red", "white", "pink"), ("black", "white", "grey")]

# (animal, sound)
SOUNDS = [("dog", "woof"), ("cat", "meow"), ("cow", "moo"), ("duck", "quack"), ("lion", "roar"),
          ("sheep", "baa"), ("pig", "oink"), ("horse", "neigh"), ("snake", "hiss"), ("owl", "hoot"),
          ("frog", "croak"), ("bee", "buzz"), ("wolf", "howl"), ("mouse", "squeak"),
          ("rooster", "cock-a-doodle-doo")]

# (animal, legs as a word, animal in Vietnamese, legs in Vietnamese)
LEGS = [("spider", "eight", "nhện", "tám"), ("dog", "four", "chó", "bốn"), ("bird", "two", "chim", "hai"),
        ("ant", "six", "kiến", "sáu"), ("cat", "four", "mèo", "bốn"), ("chicken", "two", "gà", "hai"),
        ("horse", "four", "ngựa", "bốn"), ("bee", "six", "ong", "sáu"), ("duck", "two", "vịt", "hai"),
        ("cow", "four", "bò", "bốn"), ("crab", "ten", "cua", "mười"), ("butterfly", "six", "bướm", "sáu")]

# (animal, baby)
BABIES = [("dog", "puppy"), ("cat", "kitten"), ("cow", "calf"), ("sheep", "lamb"), ("horse", "foal"),
          ("duck", "duckling"), ("frog", "tadpole"), ("bear", "cub"), ("goat", "kid"),
          ("kangaroo", "joey"), ("chicken", "chick"), ("swan", "cygnet")]

OPPOSITES_EN = [("hot", "cold"), ("big", "small"), ("up", "down"), ("fast", "slow"), ("happy", "sad"),
                ("day", "night"), ("light", "dark"), ("open", "closed"), ("tall", "short"),
                ("full", "empty"), ("wet", "dry"), ("hard", "soft"), ("early", "late"),
                ("loud", "quiet"), ("rich", "poor"), ("strong", "weak"), ("left", "right"),
                ("black", "white"), ("win", "lose"), ("yes", "no"), ("push", "pull"), ("good", "bad"),
                ("clean", "dirty"), ("thick", "thin"), ("high", "low"), ("first", "last"),
                ("true", "false"), ("inside", "outside"), ("above", "below"), ("buy", "sell"),
                ("love", "hate"), ("always", "never"), ("easy", "difficult"), ("safe", "dangerous"),
                ("old", "young"), ("north", "south"), ("east", "west")]

OPPOSITES_VI = [("nóng", "lạnh"), ("to", "nhỏ"), ("cao", "thấp"), ("nhanh", "chậm"), ("vui", "buồn"),
                ("ngày", "đêm"), ("sáng", "tối"), ("mở", "đóng"), ("đầy", "rỗng"), ("ướt", "khô"),
                ("cứng", "mềm"), ("sớm", "muộn"), ("giàu", "nghèo"), ("mạnh", "yếu"), ("đen", "trắng"),
                ("thắng", "thua"), ("tốt", "xấu"), ("sạch", "bẩn"), ("dày", "mỏng"), ("đúng", "sai"),
                ("trong", "ngoài"), ("mua", "bán"), ("yêu", "ghét"), ("dễ", "khó"), ("già", "trẻ")]

WORDS = ["cat", "dog", "apple", "house", "water", "green", "happy", "school", "table", "garden",
         "yellow", "banana", "window", "purple", "friend", "river", "mountain", "pencil", "flower",
         "rabbit", "kitchen", "summer", "winter", "music", "planet", "ocean", "bread", "chair",
         "tiger", "zebra", "monkey", "doctor", "family", "pizza", "rain", "cloud", "lemon", "horse",
         "sister", "brother", "mother", "father", "paper", "night", "world", "teacher", "computer",
         "elephant", "book", "star"]

NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
                "eleven", "twelve"]

# (task, key word every answer contains, answers)
HOWTO_EN = [
    ("boil an egg", "water", [
        "Put the egg in boiling water for about nine minutes, then cool it in cold water.",
        "Place the egg in a pot of boiling water. After about nine minutes, move it to cold water.",
        "Boil water, add the egg and cook it for nine minutes. Then put it in cold water so it is easy to peel."]),
    ("make tea", "water", [
        "Boil some water, pour it over a tea bag in a cup and wait three minutes.",
        "Put a tea bag in a cup, add hot water and let it steep for a few minutes.",
        "Heat water until it boils, pour it on the tea and wait about three minutes before drinking."]),
    ("wash my hands", "soap", [
        "Wet your hands, rub them with soap for twenty seconds, then rinse and dry them.",
        "Use soap and warm water, scrub for at least twenty seconds, and rinse well.",
        "Rub your hands with soap and water for twenty seconds, then dry them with a clean towel."]),
    ("plant a seed", "soil", [
        "Push the seed into moist soil, cover it lightly and keep it in a sunny place.",
        "Put the seed in a pot of soil about one centimetre deep and water it gently.",
        "Make a small hole in the soil, drop in the seed, cover it and water it every few days."]),
    ("brush my teeth", "toothpaste", [
        "Put a little toothpaste on your brush and brush all your teeth for two minutes.",
        "Use a soft brush with toothpaste and brush gently for two minutes, twice a day.",
        "Brush each tooth in small circles with toothpaste for two minutes, then rinse."]),
    ("tie my shoes", "loop", [
        "Cross the laces, make a loop with one lace, wrap the other around it and pull it through.",
        "Make a loop with each lace, cross the two loops and pull them tight.",
        "Tie a simple knot, make a loop, wrap the other lace around it and pull the new loop through."]),
    ("make a paper airplane", "fold", [
        "Fold a sheet of paper in half, fold the top corners to the middle, then fold the wings down.",
        "Fold the paper lengthwise, fold the corners in to make a point, and fold down both wings.",
        "Take a sheet of paper, fold it in half, fold the corners into a point and fold out two wings."]),
    ("cook rice", "water", [
        "Rinse the rice, add twice as much water and simmer it with a lid for about fifteen minutes.",
        "Use one cup of rice and two cups of water, bring it to a boil, then cook on low heat for fifteen minutes.",
        "Wash the rice, put it in a pot with water, boil it, then cover it and cook gently for fifteen minutes."]),
    ("learn a new language", "every day", [
        "Practise a little every day, learn common words first and listen to native speakers.",
        "Study for a short time every day, speak as often as you can and do not fear mistakes.",
        "Learn a few new words every day and use them in simple sentences."]),
    ("sleep better", "bed", [
        "Go to bed at the same time each night and keep your room dark and quiet.",
        "Avoid screens before bed, keep a regular schedule and sleep in a cool, dark room.",
        "Keep a fixed bed time, skip coffee in the evening and relax before you sleep."]),
    ("clean a window", "cloth", [
        "Spray the glass with soapy water and wipe it dry with a soft cloth.",
        "Wash the window with warm soapy water, then dry it with a clean cloth.",
        "Use a little vinegar and water, then wipe the glass with a dry cloth."]),
    ("make a sandwich", "bread", [
        "Take two slices of bread, add your fillings such as cheese and lettuce, and close it.",
        "Spread butter on two slices of bread, put cheese or ham in between and press them together.",
        "Put your favourite fillings between two slices of bread."]),
    ("save water", "tap", [
        "Turn off the tap while you brush your teeth and take shorter showers.",
        "Fix a dripping tap, take short showers and only run full loads in the washing machine.",
        "Close the tap when you are not using it and water plants in the evening."]),
    ("stay healthy", "sleep", [
        "Eat fruit and vegetables, move every day and get enough sleep.",
        "Drink water, exercise regularly and sleep about eight hours a night.",
        "Eat well, stay active and get plenty of sleep."]),
]

HOWTO_VI = [
    ("luộc trứng", "nước", [
        "Cho trứng vào nồi nước sôi khoảng chín phút, rồi ngâm vào nước lạnh.",
        "Đun sôi nước, thả trứng vào và luộc chín phút, sau đó cho vào nước lạnh."]),
    ("pha trà", "nước", [
        "Đun sôi nước, rót vào cốc có túi trà và chờ ba phút.",
        "Cho trà vào ấm, rót nước nóng vào và đợi vài phút rồi uống."]),
    ("rửa tay", "xà phòng", [
        "Làm ướt tay, xoa xà phòng trong hai mươi giây rồi rửa sạch và lau khô.",
        "Dùng xà phòng và nước sạch, chà tay ít nhất hai mươi giây rồi rửa lại."]),
    ("nấu cơm", "nước", [
        "Vo gạo, cho nước gấp đôi lượng gạo rồi nấu nhỏ lửa khoảng mười lăm phút.",
        "Cho gạo và nước vào nồi, đun sôi rồi đậy nắp nấu nhỏ lửa mười lăm phút."]),
    ("học ngoại ngữ", "mỗi ngày", [
        "Hãy luyện tập một chút mỗi ngày, học từ thông dụng trước và nghe người bản xứ nói.",
        "Học mỗi ngày một ít, nói thật nhiều và đừng sợ sai."]),
    ("ngủ ngon hơn", "giờ", [
        "Hãy đi ngủ đúng giờ mỗi tối và giữ phòng tối, yên tĩnh.",
        "Đi ngủ cùng một giờ mỗi đêm và tránh dùng điện thoại trước khi ngủ."]),
]

NAMES = ["Mia", "Leo", "Tom", "Lily", "Max", "Nina", "Sam", "Rosa", "Ben", "Luna", "Kai", "Ana"]
NAMES_VI = ["Na", "Bin", "Mít", "Bông", "Tí", "Su", "Cún", "Mây"]
STORY_ANIMALS = [("cat", "mèo"), ("dog", "chó"), ("rabbit", "thỏ"), ("fox", "cáo"), ("bear", "gấu"),
                 ("duck", "vịt"), ("mouse", "chuột"), ("turtle", "rùa"), ("lion", "sư tử"),
                 ("owl", "cú")]
FRUITS = ["Apple", "Banana", "Orange", "Mango", "Grape", "Pear", "Cherry", "Peach", "Lemon",
          "Strawberry", "Pineapple", "Watermelon"]
ANIMALS = ["Dog", "Cat", "Horse", "Cow", "Lion", "Tiger", "Elephant", "Rabbit", "Monkey", "Bear",
           "Sheep", "Duck", "Zebra", "Giraffe", "Fox"]
COLOUR_NAMES = ["Red", "Blue", "Green", "Yellow", "Orange", "Purple", "Pink", "Black", "White",
                "Brown", "Grey"]
